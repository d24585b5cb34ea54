#!/usr/bin/env python3
"""The client side of the crash-safety test (Tests/crash/crash-test.sh).

Subcommands, all sharing one working directory (--dir) that holds the acknowledgement
log (acks.jsonl, one JSON object a line) and the editor's token:

  init       log in as the editor, record the token and the documents the run starts with
  write      write to `galleries` from several connections until the server dies; log every
             acknowledged write, and every write whose answer never came ("unknown")
  check      read the collection back through the API and check it against the log
  summary    count cycles, acknowledged writes, writes in flight at kills, checks passed
  self-test  feed the checker doctored logs and states, and require it to object (no server)

Every write carries {"seq", "check", "pad"}: `seq` is unique in the run and grows with
time, `check` is sha256 of "id:seq:pad", and `pad` has a random length, so a document
whose fields disagree was half-written. Writer thread t owns the documents whose id is
t modulo the number of threads: one connection writes a document, one write at a time,
so the order of its acknowledgements is the order the server applied them.
Documents are created with explicit, never reused ids, and only those are deleted.

Python 3 standard library only.
"""

import argparse
import hashlib
import http.client
import json
import os
import random
import string
import sys
import threading
import time

COLLECTION = "galleries"
# Ids of created documents start here, above the bundled demo data's.
CREATED_BASE = 1000
# A thread creates at most this many documents in one cycle (keeps ids unique).
CREATES_PER_CYCLE = 1000
# seq = cycle * SEQ_STRIDE + counter: unique and increasing across the run.
SEQ_STRIDE = 10_000_000
EDITOR = {"email": "editor@example.com", "password": "editor-password"}


# ---------------------------------------------------------------- shared helpers


def check_of(doc_id, seq, pad):
    return hashlib.sha256(f"{doc_id}:{seq}:{pad}".encode()).hexdigest()


def parse_etag(value):
    """`"epoch-revision"` (possibly W/) as (epoch, revision), or None."""
    if not value:
        return None
    tag = value.strip()
    if tag.startswith("W/"):
        tag = tag[2:]
    tag = tag.strip('"')
    epoch, dash, revision = tag.rpartition("-")
    if not dash or not revision.isdigit():
        return None
    return epoch, int(revision)


def read_log(path):
    entries = []
    if not os.path.exists(path):
        return entries
    with open(path, encoding="utf-8") as log:
        for number, line in enumerate(log, 1):
            line = line.strip()
            if not line:
                continue
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError:
                # Only the writer's own process writes the log, and it is never killed,
                # so a torn line is a bug of this test, not of the server.
                raise SystemExit(f"crash-test: {path}:{number} is not JSON: {line[:80]!r}")
    return entries


class Log:
    """Appends JSON lines, one thread at a time, flushed at once."""

    def __init__(self, path):
        self.file = open(path, "a", encoding="utf-8")
        self.lock = threading.Lock()

    def add(self, entry):
        line = json.dumps(entry, separators=(",", ":"))
        with self.lock:
            self.file.write(line + "\n")
            self.file.flush()

    def close(self):
        self.file.close()


class Client:
    """One keep-alive HTTP/1.1 connection to the server."""

    def __init__(self, port, token=None, timeout=10):
        self.port = port
        self.token = token
        self.timeout = timeout
        self.connection = None

    def request(self, method, path, body=None):
        """(status, response, whole body). Raises OSError or HTTPException when the
        connection fails; ConnectionRefusedError means nothing was sent."""
        if self.connection is None:
            self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        headers = {}
        data = None
        if body is not None:
            data = json.dumps(body, separators=(",", ":")).encode()
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        try:
            self.connection.request(method, path, body=data, headers=headers)
            response = self.connection.getresponse()
            payload = response.read()  # the whole body, or IncompleteRead
        except BaseException:
            self.close()
            raise
        if response.getheader("Connection", "").lower() == "close":
            self.close()
        return response.status, response, payload

    def close(self):
        if self.connection is not None:
            self.connection.close()
            self.connection = None


def fail(message):
    print(f"crash-test: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def read_collection(client):
    """The whole collection as (documents by id, list ETag as (epoch, revision))."""
    status, response, payload = client.request("GET", f"/v1/{COLLECTION}")
    if status != 200:
        fail(f"GET /v1/{COLLECTION} answered {status}: {payload[:200]!r}")
    documents = json.loads(payload)
    total = response.getheader("X-Total-Count")
    if total is not None and int(total) != len(documents):
        fail(f"GET /v1/{COLLECTION} returned {len(documents)} documents but X-Total-Count {total}")
    tag = parse_etag(response.getheader("ETag"))
    if tag is None:
        fail(f"GET /v1/{COLLECTION} has no usable ETag: {response.getheader('ETag')!r}")
    return {document["id"]: document for document in documents}, tag


# ---------------------------------------------------------------- init


def command_init(arguments):
    client = Client(arguments.port)
    status, _, payload = client.request("POST", "/v1/auth/login", EDITOR)
    if status != 200:
        fail(f"editor login answered {status}: {payload[:200]!r}")
    token = json.loads(payload)["token"]
    with open(os.path.join(arguments.dir, "token"), "w", encoding="utf-8") as file:
        file.write(token)
    documents, (epoch, revision) = read_collection(client)
    log = Log(os.path.join(arguments.dir, "acks.jsonl"))
    log.add({"op": "initial", "ids": sorted(documents), "epoch": epoch, "revision": revision})
    log.close()
    print(f"crash-test: {len(documents)} {COLLECTION} at start, epoch {epoch}, revision {revision}")


# ---------------------------------------------------------------- write


class WritePhase:
    """Writer threads (and one reader) against a server until it dies."""

    def __init__(self, arguments):
        self.arguments = arguments
        self.port = arguments.port
        self.cycle = arguments.cycle
        self.threads = arguments.threads
        with open(os.path.join(arguments.dir, "token"), encoding="utf-8") as file:
            self.token = file.read().strip()
        self.log = Log(os.path.join(arguments.dir, "acks.jsonl"))
        self.marker = os.path.join(arguments.dir, "writing")
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.seq = self.cycle * SEQ_STRIDE
        self.acked = 0
        self.unknown = 0
        self.errors = []
        self.rng_seed = arguments.seed * 1000 + self.cycle

    def next_seq(self):
        with self.lock:
            self.seq += 1
            return self.seq

    def acknowledged(self, entry):
        self.log.add(entry)
        with self.lock:
            self.acked += 1
            first = self.acked == 1
        if first:
            open(self.marker, "w").close()

    def error(self, message):
        with self.lock:
            self.errors.append(message)
        self.stop.set()

    def run(self):
        # What exists now: the last check settled it, so writes in flight at the last
        # kill that did land are known here.
        documents, _ = read_collection(Client(self.port))
        workers = []
        for index in range(self.threads):
            owned = sorted(i for i in documents if i % self.threads == index)
            worker = threading.Thread(target=self.writer, args=(index, owned), daemon=True)
            workers.append(worker)
        reader = threading.Thread(target=self.reader, daemon=True)
        for worker in workers:
            worker.start()
        reader.start()
        deadline = time.monotonic() + self.arguments.max_seconds
        for worker in workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        timed_out = any(worker.is_alive() for worker in workers)
        self.stop.set()
        reader.join(2)
        self.log.close()
        if self.errors:
            for message in self.errors:
                print(f"crash-test: FAIL: cycle {self.cycle}: {message}", file=sys.stderr)
            sys.exit(1)
        if timed_out:
            fail(f"cycle {self.cycle}: the server was still answering after {self.arguments.max_seconds} s")
        print(f"crash-test: cycle {self.cycle}: {self.acked} writes acknowledged, {self.unknown} in flight at the kill")

    def writer(self, index, owned):
        rng = random.Random(self.rng_seed * 100 + index)
        client = Client(self.port, self.token)
        existing = list(owned)
        created = [i for i in owned if i >= CREATED_BASE]
        made = 0
        while not self.stop.is_set():
            roll = rng.random()
            if roll < 0.2 and made < CREATES_PER_CYCLE:
                op = "create"
                doc_id = CREATED_BASE + (self.cycle * CREATES_PER_CYCLE + made) * self.threads + index
                made += 1
            elif roll < (0.45 if len(created) > 12 else 0.4) and len(created) > 2:
                op = "delete"
                doc_id = created[rng.randrange(len(created))]
            elif existing:
                op = "patch"
                doc_id = existing[rng.randrange(len(existing))]
            else:
                continue
            entry = {"cycle": self.cycle, "thread": index, "op": op, "id": doc_id}
            if op == "delete":
                method, path, body = "DELETE", f"/v1/{COLLECTION}/{doc_id}", None
                expected = 204
            else:
                seq = self.next_seq()
                # A pad of 0 to 6000 bytes: some writes span more than one database page.
                pad = "".join(rng.choices(string.ascii_letters, k=rng.choice((0, 10, 300, 2000, 6000))))
                body = {"seq": seq, "check": check_of(doc_id, seq, pad), "pad": pad}
                entry["seq"] = seq
                if op == "create":
                    body = {"id": doc_id, "title": f"crash {doc_id}", **body}
                    method, path, expected = "POST", f"/v1/{COLLECTION}", 201
                else:
                    method, path, expected = "PATCH", f"/v1/{COLLECTION}/{doc_id}", 200
            try:
                status, response, payload = client.request(method, path, body)
            except ConnectionRefusedError:
                return  # the server is gone and this write was never sent
            except (OSError, http.client.HTTPException) as error:
                # Sent, but no complete answer: it may or may not have landed.
                entry.update(acked=False, error=type(error).__name__)
                self.log.add(entry)
                with self.lock:
                    self.unknown += 1
                return
            if status != expected:
                self.error(f"{method} {path} answered {status} (expected {expected}): {payload[:300]!r}")
                return
            entry.update(acked=True, status=status)
            if op != "delete":
                tag = parse_etag(response.getheader("ETag"))
                if tag is None:
                    self.error(f"{method} {path} answered {status} without an ETag")
                    return
                entry["epoch"], entry["revision"] = tag
                answered = json.loads(payload)
                if answered.get("seq") != entry["seq"] or answered.get("id") != doc_id:
                    self.error(f"{method} {path} answered {answered!r:.200}, not the document written")
                    return
            self.acknowledged(entry)
            if op == "create":
                existing.append(doc_id)
                created.append(doc_id)
            elif op == "delete":
                existing.remove(doc_id)
                created.remove(doc_id)

    def reader(self):
        """Reads the collection while writes go on: a revision anyone saw must survive."""
        client = Client(self.port)
        highest = 0
        while not self.stop.is_set():
            try:
                status, response, _ = client.request("GET", f"/v1/{COLLECTION}")
            except (OSError, http.client.HTTPException):
                return
            tag = parse_etag(response.getheader("ETag")) if status == 200 else None
            if tag and tag[1] > highest:
                highest = tag[1]
                self.log.add({"cycle": self.cycle, "op": "observe", "epoch": tag[0], "revision": tag[1]})
            self.stop.wait(0.03)


def command_write(arguments):
    WritePhase(arguments).run()


# ---------------------------------------------------------------- check


def expectations(entries):
    """What the log allows, per document id and for the store as a whole."""
    initial = next((entry for entry in entries if entry.get("op") == "initial"), None)
    if initial is None:
        raise SystemExit("crash-test: the log has no initial entry (run init first)")
    history = {}
    for entry in entries:
        if entry.get("op") in ("create", "patch", "delete"):
            history.setdefault(entry["id"], []).append(entry)
    return initial, history


def check_state(entries, documents, list_tag, document_tags, cycle=None):
    """Compares what the server answers with what the log allows.

    - documents: id -> document, from the list; list_tag: (epoch, revision) of the list
      (every write goes to this collection, so that is the store's revision);
      document_tags: id -> (epoch, revision) from GET of each document.
    Returns (violations, statistics).
    """
    initial, history = expectations(entries)
    violations = check_epochs(entries, initial["epoch"], list_tag, document_tags)
    violations += check_store_revision(entries, initial, list_tag)
    in_flight = landed = 0
    for doc_id in sorted(set(history) | set(documents) | set(initial["ids"])):
        writes = history.get(doc_id, [])
        document = documents.get(doc_id)
        violations += check_document(doc_id, writes, document, document_tags.get(doc_id), initial, list_tag)
        # For the summary: writes in flight at this cycle's kill, and whether they landed.
        for write in writes:
            if write.get("acked") is False and write.get("cycle") == cycle:
                in_flight += 1
                if (write["op"] == "delete" and document is None) or (
                    document is not None and write.get("seq") == document.get("seq")
                ):
                    landed += 1
    return violations, {"in_flight": in_flight, "landed": landed, "documents": len(documents)}


def check_epochs(entries, epoch, list_tag, document_tags):
    """One epoch for the whole run: in every answer and every acknowledgement."""
    seen = [("the list", list_tag)] + [(f"{COLLECTION}/{i}", tag) for i, tag in document_tags.items()]
    seen += [
        (f"the {e['op']} {e.get('id', '')} of cycle {e.get('cycle')}", (e["epoch"], e["revision"]))
        for e in entries
        if "epoch" in e and e.get("op") != "initial"
    ]
    return [
        f"epoch changed: {where} has epoch {tag[0]}, the run started with {epoch}"
        for where, tag in seen
        if tag[0] != epoch
    ]


def check_store_revision(entries, initial, list_tag):
    """The store's revision never drops below one acknowledged, observed or checked."""
    floor, source = initial["revision"], "the initial read"
    for entry in entries:
        revision = entry.get("revision")
        if revision is not None and entry.get("acked", True) and revision > floor:
            floor, source = revision, f"the {entry['op']} {entry.get('id', '')} of cycle {entry.get('cycle')}"
    if list_tag[1] >= floor:
        return []
    return [
        f"revision went backwards: the store answers at revision {list_tag[1]}, "
        f"but revision {floor} was acknowledged or observed before ({source})"
    ]


def check_document(doc_id, writes, document, tag, initial, list_tag):
    """One document (None: absent) against the writes to it, in the order they were made.

    Allowed: the state its last acknowledged write left (or its initial state), or the
    state of any write after that whose answer never came (a kill cut it off; it may
    have landed).
    """
    violations = []
    acked = [index for index, write in enumerate(writes) if write.get("acked")]
    last = writes[acked[-1]] if acked else None
    unknown = writes[acked[-1] + 1 :] if acked else writes
    if last is None:
        present, seq = doc_id in initial["ids"], None  # None: as the data file has it
    else:
        present, seq = last["op"] != "delete", last.get("seq")
    allowed_seqs = {seq} if present else set()
    absent_allowed = not present
    for write in unknown:
        if write["op"] == "delete":
            absent_allowed = True
        else:
            allowed_seqs.add(write["seq"])

    what = f"{COLLECTION}/{doc_id}"
    if last is not None:
        what += f" (last acknowledged: {last['op']}"
        what += f" seq {last['seq']}" if "seq" in last else ""
        what += f" at revision {last['revision']}" if "revision" in last else ""
        what += f", cycle {last['cycle']})"
    if document is None:
        if not absent_allowed:
            violations.append(f"acknowledged write lost: {what} is missing")
        return violations

    found = document.get("seq")
    if found not in allowed_seqs:
        if not writes and doc_id not in initial["ids"]:
            violations.append(f"unexpected document {what}: never created by this test")
        elif last is not None and last["op"] == "delete":
            violations.append(f"acknowledged delete lost: {what} exists again with seq {found}")
        elif seq is not None and (found is None or found < seq):
            violations.append(f"acknowledged write lost: {what} has seq {found}")
        else:
            allowed = ", ".join(str(value) for value in sorted(allowed_seqs, key=str))
            violations.append(f"{what} has seq {found}, which no write to it carried (allowed: {allowed})")
    if tag is not None:
        # A write to a document sets all of seq, check and pad, so the document's
        # revision is exactly that of the write whose seq it holds.
        if last is not None and "revision" in last:
            if tag[1] < last["revision"] or (found == seq and tag[1] != last["revision"]):
                violations.append(
                    f"document revision wrong: {what} answers with ETag revision {tag[1]} and seq {found}"
                )
        if tag[1] > list_tag[1]:
            violations.append(f"{what} has revision {tag[1]}, above the collection's {list_tag[1]}")
    # Nothing half-written: a document with a seq carries the check of its own fields.
    if "seq" in document and document.get("check") != check_of(doc_id, found, document.get("pad", "")):
        violations.append(f"half-written document: {what} has seq {found} and a check that does not match")
    return violations


def doctor(entries, documents, list_tag, kind):
    """The log plus one entry the server never gave: an acknowledgement (lost-patch,
    lost-create, lost-delete) or a read (revision: a higher one, epoch: another)."""
    doctored = list(entries)
    mine = sorted(i for i in documents if i >= CREATED_BASE) or sorted(documents)
    target = mine[-1]
    top_seq = max([e.get("seq", 0) for e in entries] + [0])
    if kind == "lost-patch":
        doctored.append({"cycle": 999, "op": "patch", "id": target, "seq": top_seq + 1, "acked": True,
                         "epoch": list_tag[0], "revision": list_tag[1] + 1})
    elif kind == "lost-create":
        doctored.append({"cycle": 999, "op": "create", "id": 10 ** 9, "seq": top_seq + 1, "acked": True,
                         "epoch": list_tag[0], "revision": list_tag[1]})
    elif kind == "lost-delete":
        doctored.append({"cycle": 999, "op": "delete", "id": target, "acked": True})
    elif kind == "revision":
        doctored.append({"cycle": 999, "op": "observe", "epoch": list_tag[0], "revision": list_tag[1] + 5})
    elif kind == "epoch":
        doctored.append({"cycle": 999, "op": "observe", "epoch": "0" * 16, "revision": 1})
    else:
        raise SystemExit(f"crash-test: unknown doctoring {kind}")
    return doctored


def command_check(arguments):
    path = arguments.log or os.path.join(arguments.dir, "acks.jsonl")
    entries = read_log(path)
    client = Client(arguments.port)
    documents, list_tag = read_collection(client)
    document_tags = {}
    for doc_id, listed in documents.items():
        status, response, payload = client.request("GET", f"/v1/{COLLECTION}/{doc_id}")
        if status != 200:
            fail(f"GET /v1/{COLLECTION}/{doc_id} answered {status} though the list has it")
        if json.loads(payload) != listed:
            fail(f"GET /v1/{COLLECTION}/{doc_id} differs from the list's copy")
        document_tags[doc_id] = parse_etag(response.getheader("ETag"))
    if arguments.doctor:
        entries = doctor(entries, documents, list_tag, arguments.doctor)
    violations, statistics = check_state(entries, documents, list_tag, document_tags, arguments.cycle)
    label = f"cycle {arguments.cycle}" if arguments.cycle is not None else "check"
    if violations:
        for violation in violations[:20]:
            print(f"crash-test: VIOLATION ({label}): {violation}", file=sys.stderr)
        if len(violations) > 20:
            print(f"crash-test: ... and {len(violations) - 20} more", file=sys.stderr)
        print(f"crash-test: {label}: {len(violations)} violations", file=sys.stderr)
        sys.exit(1)
    if arguments.record:
        log = Log(path)
        log.add({"cycle": arguments.cycle, "op": "checked", "epoch": list_tag[0], "revision": list_tag[1],
                 "documents": statistics["documents"], "in_flight": statistics["in_flight"],
                 "landed": statistics["landed"]})
        log.close()
    print(f"crash-test: {label}: ok, {statistics['documents']} documents, revision {list_tag[1]}, "
          f"{statistics['in_flight']} writes in flight at the kill ({statistics['landed']} landed)")


# ---------------------------------------------------------------- summary


def command_summary(arguments):
    entries = read_log(os.path.join(arguments.dir, "acks.jsonl"))
    acked = [e for e in entries if e.get("acked") is True]
    by_op = {op: sum(1 for e in acked if e["op"] == op) for op in ("patch", "create", "delete")}
    unknown = [e for e in entries if e.get("acked") is False]
    checks = [e for e in entries if e.get("op") == "checked"]
    cycles = len({e["cycle"] for e in entries if e.get("op") in ("patch", "create", "delete")})
    landed = sum(e.get("landed", 0) for e in checks)
    revision = max((e["revision"] for e in checks), default=0)
    initial = next((e["revision"] for e in entries if e.get("op") == "initial"), 0)
    # Each write takes one revision: informative, not a rule the server must keep.
    counted = initial + len(acked) + landed
    accounting = "= the initial one + acknowledged + landed" if counted == revision else f"(counted {counted})"
    print(f"crash-test: summary: {cycles} cycles with kill -9; {len(acked)} acknowledged writes "
          f"({by_op['patch']} PATCH, {by_op['create']} POST, {by_op['delete']} DELETE); "
          f"{len(unknown)} writes in flight at kills (sent, never answered; {landed} of them landed); "
          f"{len(checks)} checks passed; final revision {revision} {accounting}")


# ---------------------------------------------------------------- self-test


def command_self_test(_arguments):
    """The checker must accept a consistent state and object to each kind of loss."""
    epoch = "00000000000000aa"

    def doc(doc_id, seq, pad="p"):
        return {"id": doc_id, "seq": seq, "check": check_of(doc_id, seq, pad), "pad": pad}

    log = [
        {"op": "initial", "ids": [1, 2], "epoch": epoch, "revision": 2},
        {"cycle": 1, "op": "patch", "id": 1, "seq": 11, "acked": True, "epoch": epoch, "revision": 3},
        {"cycle": 1, "op": "create", "id": 1001, "seq": 12, "acked": True, "epoch": epoch, "revision": 4},
        {"cycle": 1, "op": "create", "id": 1002, "seq": 13, "acked": True, "epoch": epoch, "revision": 5},
        {"cycle": 1, "op": "delete", "id": 1002, "acked": True},
        {"cycle": 1, "op": "observe", "epoch": epoch, "revision": 6},
        {"cycle": 1, "op": "patch", "id": 2, "seq": 14, "acked": False},
        {"cycle": 1, "op": "create", "id": 1003, "seq": 15, "acked": False},
    ]
    documents = {1: doc(1, 11), 2: {"id": 2, "title": "demo"}, 1001: doc(1001, 12)}
    tags = {1: (epoch, 3), 2: (epoch, 1), 1001: (epoch, 4)}
    cases = {
        "consistent": (log, documents, (epoch, 6), tags, None),
        "in-flight writes that landed": (
            log, {**documents, 2: doc(2, 14), 1003: doc(1003, 15)}, (epoch, 8),
            {**tags, 2: (epoch, 7), 1003: (epoch, 8)}, None),
        "an in-flight delete that landed": (
            log + [{"cycle": 1, "op": "delete", "id": 1001, "acked": False}],
            {k: v for k, v in documents.items() if k != 1001}, (epoch, 7), tags, None),
        "an acknowledged patch lost": (
            log, {**documents, 1: {"id": 1, "title": "demo"}}, (epoch, 6), {**tags, 1: (epoch, 1)}, "lost"),
        "an acknowledged patch replaced by an older one": (
            log + [{"cycle": 2, "op": "patch", "id": 1, "seq": 20, "acked": True, "epoch": epoch, "revision": 9}],
            documents, (epoch, 9), tags, "lost"),
        "an acknowledged create lost": (
            log, {k: v for k, v in documents.items() if k != 1001}, (epoch, 6), tags, "missing"),
        "an acknowledged delete undone": (
            log, {**documents, 1002: doc(1002, 13)}, (epoch, 6), {**tags, 1002: (epoch, 5)}, "delete lost"),
        "a half-written document": (
            log, {**documents, 1: {**doc(1, 11), "pad": "q"}}, (epoch, 6), tags, "half-written"),
        "the store's revision behind an observed one": (log, documents, (epoch, 5), tags, "backwards"),
        "a document's revision behind its acknowledgement": (
            log, documents, (epoch, 6), {**tags, 1: (epoch, 2)}, "document revision"),
        "a new epoch": (
            log, documents, ("00000000000000bb", 6), {k: ("00000000000000bb", r) for k, (_, r) in tags.items()},
            "epoch changed"),
        "a document nobody created": (
            log, {**documents, 5000: doc(5000, 1)}, (epoch, 6), {**tags, 5000: (epoch, 6)}, "unexpected"),
        "a seq no write carried": (log, {**documents, 1: doc(1, 99)}, (epoch, 6), tags, "no write"),
    }
    failures = 0
    for name, (entries, state, list_tag, document_tags, expected) in cases.items():
        violations, _ = check_state(entries, state, list_tag, document_tags)
        if expected is None:
            good = not violations
        else:
            good = any(expected in violation for violation in violations)
        if not good:
            failures += 1
            print(f"crash-test: self-test FAILED: {name}: got {violations}", file=sys.stderr)
    if failures:
        sys.exit(1)
    accepted = sum(1 for case in cases.values() if case[-1] is None)
    print(f"crash-test: self-test: the checker accepted {accepted} consistent states "
          f"and caught {len(cases) - accepted} doctored ones")


# ---------------------------------------------------------------- main


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    def add(name, function, server=True):
        command = commands.add_parser(name)
        command.set_defaults(function=function)
        if server:
            command.add_argument("--dir", required=True)
            command.add_argument("--port", type=int, required=name != "summary")
        return command

    add("init", command_init)
    write = add("write", command_write)
    write.add_argument("--cycle", type=int, required=True)
    write.add_argument("--threads", type=int, default=4)
    write.add_argument("--seed", type=int, default=0)
    write.add_argument("--max-seconds", type=float, default=20)
    check = add("check", command_check)
    check.add_argument("--cycle", type=int)
    check.add_argument("--log", help="check against this log instead of the run's")
    check.add_argument("--doctor", help="add one entry the server never gave, to see the check fail: "
                                        "lost-patch, lost-create, lost-delete, revision or epoch")
    check.add_argument("--no-record", dest="record", action="store_false",
                       help="do not log the check (for doctored checks)")
    add("summary", command_summary)
    add("self-test", command_self_test, server=False)
    arguments = parser.parse_args()
    if getattr(arguments, "doctor", None):
        arguments.record = False
    arguments.function(arguments)


if __name__ == "__main__":
    main()
