import CMicroHTTPD
import Synchronization

/// A request whose connection is suspended: no thread waits for it, and any thread may
/// answer it, once.
///
/// Answering resumes the connection. A second answer is ignored, so a long-poll that
/// wakes at the same moment as its deadline or the server's shutdown is answered once.
public final class SuspendedRequest: Sendable {
    /// The libmicrohttpd request behind this handle.
    ///
    /// `@unchecked Sendable`: libmicrohttpd allows `lk_mhd_respond` (resume) from any
    /// thread, and `answered` guarantees the pointer is used at most once.
    struct Handle: @unchecked Sendable {
        let pointer: OpaquePointer
    }

    private let handle: Handle
    private let answered = Atomic<Bool>(false)
    /// Applied to every answer (``decorating(_:)``).
    private let decoration = Mutex<(@Sendable (HTTPResponse) -> HTTPResponse)?>(nil)
    private let registry: SuspendedRequests
    /// The event loop holding the connection, which ``onItsLoop(_:)`` runs work on.
    private let loop: EventLoop
    /// Whether shutdown answers it (a wait) or waits for its answer (work in progress).
    let endsAtShutdown: Bool
    /// What shutdown answers it with; dropped once it is answered, so that nothing it holds
    /// (a held poll, which holds this request while it waits) outlives the answer.
    private let shutdownAnswer: Mutex<ShutdownAnswer?>
    let id: UInt64

    /// In a struct: a closure kept bare in a generic `Mutex` is wrapped in a reabstraction
    /// thunk, one more allocation for every held request.
    private struct ShutdownAnswer {
        let make: @Sendable () -> HTTPResponse
    }

    init(
        handle: Handle,
        id: UInt64,
        registry: SuspendedRequests,
        loop: EventLoop,
        endsAtShutdown: Bool,
        onShutdown: @escaping @Sendable () -> HTTPResponse
    ) {
        self.handle = handle
        self.id = id
        self.registry = registry
        self.loop = loop
        self.endsAtShutdown = endsAtShutdown
        self.shutdownAnswer = Mutex(ShutdownAnswer(make: onShutdown))
    }

    /// Whether the request has been answered.
    public var isAnswered: Bool {
        answered.load(ordering: .acquiring)
    }

    /// Runs `work` on the event loop that holds this request's connection: at once when
    /// called there, else soon, with the other work posted to that loop, whose answers
    /// are resumed together (``resumingTogether(_:)``).
    ///
    /// A wake that finds many polls spread over the loops has each loop render and answer
    /// its own, in parallel, instead of one thread answering them all before any is sent.
    /// Within a batch (``resumingTogether(answeringInPlace:_:)``) work for another loop is
    /// posted in chunks, but for the batch's first few requests (`answeringInPlace`) it
    /// runs here, and what it answers is resumed as soon as it returns. Once the server
    /// has stopped, `work` runs at once.
    public func onItsLoop(_ work: @escaping @Sendable () -> Void) {
        if let batch = ResumeBatch.current, !loop.isCurrent, batch.takeInPlace() {
            Self.resumingTogether(work)
            return
        }
        loop.runHere(work)
    }

    /// Tags the request for the wake trace (``WakeTrace``) with the revision that woke it,
    /// so the C layer stamps when its answer is resumed and sent. Call before answering.
    public func traceWake(revision: UInt64) {
        guard !isAnswered else { return }
        lk_mhd_request_set_trace_tag(handle.pointer, revision)
    }

    /// Has `decorate` applied to every answer given to this request from now on (header
    /// fields of the request's own, such as CORS's). Its answers are then never shared.
    /// - Returns: self.
    public func decorating(_ decorate: @escaping @Sendable (HTTPResponse) -> HTTPResponse) -> SuspendedRequest {
        decoration.withLock { $0 = decorate }
        return self
    }

    /// Answers the request from any thread.
    /// - Returns: false if it was already answered (the response is dropped).
    @discardableResult
    public func respond(_ response: HTTPResponse) -> Bool {
        guard claim() else { return false }
        let response = decoration.withLock { $0 }.map { $0(response) } ?? response
        if let batch = ResumeBatch.current {
            send(response, through: handle.pointer, resuming: false)
            batch.add(handle)
        } else {
            send(response, through: handle.pointer)
        }
        return true
    }

    /// Answers the request with the response every request answered under `key` in the
    /// same batch (``resumingTogether(_:)``) gets: built by `make` and handed to the C
    /// layer once for them all, then sent on each connection. Outside a batch, or when
    /// this connection must close after its answer, it gets its own copy.
    ///
    /// `key` must name the response's bytes exactly: equal keys, equal responses (for
    /// example the parts it is made from, each in full).
    /// - Returns: false if it was already answered.
    @discardableResult
    public func respond(sharing key: [String], _ make: () -> HTTPResponse) -> Bool {
        if decoration.withLock({ $0 != nil }) { return respond(make()) }
        guard claim() else { return false }
        guard let batch = ResumeBatch.current else {
            send(make(), through: handle.pointer)
            return true
        }
        let shared = batch.shared(key, make)
        if shared.map({ lk_mhd_respond_shared_deferred(handle.pointer, $0.pointer) }) != 0 {
            send(make(), through: handle.pointer, resuming: false)  // out of memory, or closing
        }
        batch.add(handle)
        return true
    }

    /// Answers it as shutdown does (``HTTPReply/wait(onShutdown:hold:)``), unless it was answered.
    func respondAtShutdown() {
        guard let answer = shutdownAnswer.withLock({ $0 }) else { return }
        respond(answer.make())
    }

    /// Marks the request answered, once: false if it already was.
    private func claim() -> Bool {
        guard answered.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return false }
        registry.remove(id)
        // Taken out under the lock, released after it: what it holds may go with it.
        _ = shutdownAnswer.withLock { $0.take() }
        return true
    }

    /// Runs `body`; the suspended requests it answers (on this thread) are resumed together
    /// when it returns, back to back. A thread that is no event loop then lets a loop it
    /// woke on its own CPU run first (`lk_mhd_yield_to_loops`), after the outermost batch.
    ///
    /// libmicrohttpd 0.9.75 walks every suspended connection on each pass that resumes
    /// any; resuming thousands one by one, interleaved with those passes, costs a walk
    /// each. Use it around a write that may wake many long-polls.
    /// - Parameter inPlace: how many requests' ``onItsLoop(_:)`` work runs on this thread
    ///   rather than being posted to their loops (for a thread that is no event loop).
    ///   Their answers go at once, ahead of the batch's.
    public static func resumingTogether<Result>(
        answeringInPlace inPlace: Int = 0, _ body: () throws -> Result
    ) rethrows -> Result {
        let batch = ResumeBatch(inPlace: inPlace)
        let isOutermost = ResumeBatch.current == nil
        defer {
            batch.resumeAll()
            if isOutermost { lk_mhd_yield_to_loops() }
        }
        return try batch.makingCurrent(body)
    }

    /// The running batch's object of type `Kept` (``resumingTogether(_:)``), made by `make`
    /// when it is asked for the second time in the batch; nil outside a batch, and at the
    /// batch's first ask (of any type).
    ///
    /// For what the work of one batch may share and no later work may: a batch is one
    /// loop's pass over the work posted to it, or one write's wakes. Made only once a
    /// second piece of work asks, so that a batch of one (a single wake) makes nothing.
    public static func batchLocal<Kept: AnyObject & Sendable>(_ make: () -> Kept) -> Kept? {
        guard let kept = ResumeBatch.current?.local(ObjectIdentifier(Kept.self), make) else { return nil }
        return unsafeDowncast(kept, to: Kept.self)
    }

    /// Sends now the answers of requests resumed on other daemons of this event loop (the
    /// long-polls a write woke), before the running handler builds its own answer, which
    /// the poll's client does not wait for. Does nothing outside a request's handler.
    public static func sendWoken() {
        lk_mhd_send_woken()
    }
}

/// Answered requests waiting to be resumed together.
final class ResumeBatch: Sendable {
    /// The batch of the running thread's ``makingCurrent(_:)``, if any. `body` there is
    /// synchronous: it runs on one thread, whose batch it sees.
    static var current: ResumeBatch? {
        lk_thread_resume_batch().map { Unmanaged<ResumeBatch>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Runs `body` with this batch as the thread's current one; the outer one after.
    func makingCurrent<Result>(_ body: () throws -> Result) rethrows -> Result {
        let outer = lk_thread_resume_batch()
        lk_thread_set_resume_batch(Unmanaged.passUnretained(self).toOpaque())
        defer { lk_thread_set_resume_batch(outer) }
        return try body()
    }

    /// Work for other loops is posted this many at a time: few posts, and the other loops
    /// start while this one still works.
    static let postChunk = 64

    private let handles = Mutex<[SuspendedRequest.Handle]>([])
    /// How many more requests' work runs on the batch's thread, not on their loops.
    private let inPlace: Atomic<Int>

    init(inPlace: Int = 0) {
        self.inPlace = Atomic(inPlace)
    }

    /// Whether one more request's work runs on the batch's thread; counts it if so.
    func takeInPlace() -> Bool {
        guard inPlace.load(ordering: .relaxed) > 0 else { return false }
        inPlace.wrappingSubtract(1, ordering: .relaxed)
        return true
    }

    /// Responses shared in this batch, by what names their bytes.
    private struct SharedResponses {
        /// Every one, once there are two.
        var byKey: [[String]: SharedResponse] = [:]
        /// The last one asked for, found without hashing its key: a fan-out asks for one,
        /// thousands of times.
        var last: (key: [String], response: SharedResponse)?
    }

    private let responses = Mutex(SharedResponses())
    /// Work for other loops not yet posted.
    private let posts = Mutex<[(loop: EventLoop, work: [Action])]>([])
    /// What ``SuspendedRequest/batchLocal(_:)`` made in this batch, one of each type, and
    /// whether it was asked before.
    private struct Locals {
        var asked = false
        var objects: [(type: ObjectIdentifier, object: AnyObject & Sendable)] = []
    }

    private let locals = Mutex(Locals())

    /// The batch's object of `type`, made by `make` at its second ask; nil at the batch's
    /// first. Not generic: ``SuspendedRequest/batchLocal(_:)``, generic and called from
    /// another module, runs unspecialized, and this call inside it, generic, cost 430
    /// instructions (Benchmarks/README.md, stop 53).
    func local(_ type: ObjectIdentifier, _ make: () -> AnyObject & Sendable) -> (AnyObject & Sendable)? {
        locals.withLock { locals in
            for kept in locals.objects where kept.type == type { return kept.object }
            guard locals.asked else {
                locals.asked = true
                return nil
            }
            let made = make()
            locals.objects.append((type, made))
            return made
        }
    }

    /// Queues `work` for `loop`, posting the loop's queue when it is a chunk long.
    func post(_ work: @escaping @Sendable () -> Void, to loop: EventLoop) {
        let chunk: [Action]? = posts.withLock { posts in
            guard let index = posts.firstIndex(where: { $0.loop.isSame(as: loop) }) else {
                posts.append((loop, [Action(work)]))
                return nil
            }
            posts[index].work.append(Action(work))
            guard posts[index].work.count >= Self.postChunk else { return nil }
            defer { posts[index].work = [] }
            return posts[index].work
        }
        if let chunk { loop.run { for work in chunk { work.run() } } }
    }

    func add(_ handle: SuspendedRequest.Handle) {
        handles.withLock { $0.append(handle) }
    }

    /// The response shared under `key` in this batch, made by `make` the first time;
    /// nil when out of memory.
    func shared(_ key: [String], _ make: () -> HTTPResponse) -> SharedResponse? {
        let known = responses.withLock { responses -> SharedResponse? in
            if let last = responses.last, last.key == key { return last.response }
            guard let found = responses.byKey[key] else { return nil }
            responses.last = (key, found)
            return found
        }
        if let known { return known }
        guard let shared = SharedResponse(make()) else { return nil }
        responses.withLock {
            // The first is only `last`: a batch with one response (a single wake, a fan-out
            // on one view) makes no dictionary and hashes no key.
            if let last = $0.last {
                $0.byKey[last.key] = last.response
                $0.byKey[key] = shared
            }
            $0.last = (key, shared)
        }
        return shared
    }

    /// Resumes the answered requests, and posts the work still queued.
    func resumeAll() {
        for handle in handles.withLock({ $0 }) {
            lk_mhd_resume(handle.pointer)
        }
        for (loop, chunk) in posts.withLock({ $0 }) where !chunk.isEmpty {
            loop.run { for work in chunk { work.run() } }
        }
    }
}

/// The suspended requests of one server, so that shutdown can answer each of them.
///
/// A request's id is its slot, and a freed slot is used again: inserting and removing are
/// an array store, not a hash (they happen for every held poll, and a fan-out removes
/// thousands at once).
final class SuspendedRequests: Sendable {
    private struct Slots {
        var requests: [SuspendedRequest?] = []
        var free: [UInt64] = []
        var count = 0
    }

    private let slots = Mutex(Slots())

    /// An id for a request about to be inserted.
    func makeID() -> UInt64 {
        slots.withLock { slots in
            if let id = slots.free.popLast() { return id }
            slots.requests.append(nil)
            return UInt64(slots.requests.count - 1)
        }
    }

    func insert(_ request: SuspendedRequest) {
        slots.withLock { slots in
            slots.requests[Int(request.id)] = request
            slots.count += 1
        }
    }

    func remove(_ id: UInt64) {
        // Released outside the lock.
        _ = slots.withLock { slots -> SuspendedRequest? in
            guard let request = slots.requests[Int(id)] else { return nil }
            slots.requests[Int(id)] = nil
            slots.count -= 1
            slots.free.append(id)
            return request
        }
    }

    var count: Int {
        slots.withLock { $0.count }
    }

    /// Answers every held wait with its shutdown response; work in progress answers itself.
    func endWaits() {
        let held = slots.withLock { $0.requests.compactMap { $0 }.filter(\.endsAtShutdown) }
        for request in held {
            request.respondAtShutdown()
        }
    }
}

/// One response in the C layer that many requests are answered with; the requests hold
/// their own references, so it may go once they have been answered.
final class SharedResponse: @unchecked Sendable {
    /// `@unchecked Sendable`: the C object is immutable and reference-counted atomically.
    let pointer: OpaquePointer

    init?(_ response: HTTPResponse) {
        let made = withCHeaders(response) { headers in
            response.body.withUnsafeBytes { body in
                lk_mhd_shared_create(
                    UInt32(response.status), headers.baseAddress, headers.count, body.baseAddress, body.count)
            }
        }
        guard let made else { return nil }
        pointer = made
    }

    deinit {
        lk_mhd_shared_release(pointer)
    }
}

/// Hands a response to the C layer: copies headers and body unless it is prepared. With `resuming: false` a
/// suspended request stays suspended until `lk_mhd_resume`.
func send(_ response: HTTPResponse, through request: OpaquePointer, resuming: Bool = true) {
    if resuming, let prepared = response.prepared, lk_mhd_respond_shared(request, prepared.shared.pointer) == 0 {
        return
    }
    withCHeaders(response) { headers in
        response.body.withUnsafeBytes { body in
            if resuming {
                _ = lk_mhd_respond(
                    request, UInt32(response.status), headers.baseAddress, headers.count, body.baseAddress, body.count)
            } else {
                _ = lk_mhd_respond_deferred(
                    request, UInt32(response.status), headers.baseAddress, headers.count, body.baseAddress, body.count)
            }
        }
    }
}

/// Calls `body` with `response`'s headers as C strings.
func withCHeaders<Result>(_ response: HTTPResponse, _ body: (UnsafeBufferPointer<lk_mhd_header>) -> Result) -> Result {
    // Every name and value NUL-terminated in one buffer, then pointers into it: both on
    // the stack when small, as an answer's header fields are (Swift's temporary allocation).
    let fields = response.headers
    var length = 0
    for field in fields { length += field.name.utf8.count + field.value.utf8.count + 2 }
    return withUnsafeTemporaryAllocation(of: CChar.self, capacity: max(length, 1)) { text in
        withUnsafeTemporaryAllocation(of: lk_mhd_header.self, capacity: max(fields.count, 1)) { headers in
            var offset = 0
            var count = 0
            for field in fields {
                let name = offset
                offset = copyCString(field.name, into: text, at: offset)
                let value = offset
                offset = copyCString(field.value, into: text, at: offset)
                headers[count] = lk_mhd_header(name: text.baseAddress! + name, value: text.baseAddress! + value)
                count += 1
            }
            return body(UnsafeBufferPointer(rebasing: headers[..<count]))
        }
    }
}

/// Writes `string`'s UTF-8 and a NUL into `buffer` at `offset`; returns the offset after them.
/// One copy of its contiguous bytes: a loop over `utf8` took 10,000 instructions of a
/// single-wake round's 311,000 (Benchmarks/README.md, stop 51).
private func copyCString(_ string: String, into buffer: UnsafeMutableBufferPointer<CChar>, at offset: Int) -> Int {
    var string = string  // withUTF8 is mutating; a native string is not copied
    let count = string.withUTF8 { utf8 in
        precondition(offset + utf8.count < buffer.count, "the header text outgrew its buffer")
        if let bytes = utf8.baseAddress {
            UnsafeMutableRawPointer(buffer.baseAddress! + offset).copyMemory(from: bytes, byteCount: utf8.count)
        }
        return utf8.count
    }
    buffer[offset + count] = 0
    return offset + count + 1
}
