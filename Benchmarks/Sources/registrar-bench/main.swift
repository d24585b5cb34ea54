// Microbenchmarks of FieldRegistrar: register, cancel, and one commit waking many waiters.
// Targets (DESIGN.md §2): ~100 B and ~170 ns per waiter, 100k wakes in ~10 ms.
//
//   swift run -c release --package-path Benchmarks registrar-bench [waiters] [rounds]
import Glibc
import LookoutJSON
import LookoutStore
import Synchronization

let waiterCount = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1])! : 100_000
let rounds = CommandLine.arguments.count > 2 ? Int(CommandLine.arguments[2])! : 5
let clock = ContinuousClock()

/// Resident memory from /proc/self/statm (second field, in pages).
func residentBytes() -> Int {
    let file = fopen("/proc/self/statm", "r")!
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 256)
    _ = fgets(&line, 256, file)
    let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    let pages = text.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// `value` with `digits` decimals, right-aligned in 9 columns.
func format(_ value: Double, _ digits: Int = 1) -> String {
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let text = "\((value * scale).rounded() / scale)"
    return String(repeating: " ", count: max(0, 9 - text.count)) + text
}

func nanoseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1e9 + Double(duration.components.attoseconds) / 1e9
}

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

var registerNs: [Double] = []
var cancelNs: [Double] = []
var wakeMs: [Double] = []
var bytesPerWaiter: [Double] = []
var wakeOtherKeyNs: [Double] = []

for _ in 0..<rounds {
    let registrar = FieldRegistrar()
    let woken = Atomic<Int>(0)
    // Each waiter on its own key (selective wake), then all on one key (fan-out).
    let before = residentBytes()
    var ids: [FieldRegistrar.WaiterID] = []
    ids.reserveCapacity(waiterCount)
    var start = clock.now
    for index in 0..<waiterCount {
        if case .waiting(let id) = registrar.register(
            [index], after: 0, wake: { _ in woken.add(1, ordering: .relaxed) })
        {
            ids.append(id)
        }
    }
    registerNs.append(nanoseconds(clock.now - start) / Double(waiterCount))
    // Resident memory only grows on the first round; later rounds reuse freed pages.
    if bytesPerWaiter.isEmpty {
        bytesPerWaiter.append(
            Double(residentBytes() - before - ids.capacity * MemoryLayout<FieldRegistrar.WaiterID>.stride)
                / Double(waiterCount))
    }

    // A write to a key nobody watches, with all these waiters registered.
    start = clock.now
    for revision in 1...1_000 {
        registrar.commit([waiterCount + revision], revision: UInt64(revision))
    }
    wakeOtherKeyNs.append(nanoseconds(clock.now - start) / 1_000)

    start = clock.now
    for id in ids { registrar.cancel(id) }
    cancelNs.append(nanoseconds(clock.now - start) / Double(waiterCount))
    precondition(registrar.waiterCount == 0)

    for _ in 0..<waiterCount {
        _ = registrar.register([waiterCount + 2_000], after: 1_000, wake: { _ in woken.add(1, ordering: .relaxed) })
    }
    start = clock.now
    let count = registrar.commit([waiterCount + 2_000], revision: 1_001)
    wakeMs.append(nanoseconds(clock.now - start) / 1e6)
    precondition(count == waiterCount && woken.load(ordering: .relaxed) == waiterCount)
}

print("FieldRegistrar, \(waiterCount) waiters, median of \(rounds) rounds (release, -Ounchecked)")
print("register            \(format(median(registerNs))) ns per waiter (one key each)")
print("memory              \(format(median(bytesPerWaiter))) B per waiter (resident, one key each)")
print("commit, unwatched   \(format(median(wakeOtherKeyNs))) ns per commit with \(waiterCount) waiters elsewhere")
print("cancel              \(format(median(cancelNs))) ns per waiter")
print("wake all on one key \(format(median(wakeMs))) ms for \(waiterCount) waiters")

// Read-set recording: reading one field of a document through a snapshot, recorded.
do {
    let documents: [JSONValue] = (1...1_000).map { ["id": .int($0), "title": .string("t\($0)"), "rank": .int($0)] }
    let store = try Store([try DocumentCollection(name: "items", documents: documents)], epoch: "bench")
    let snapshot = store.snapshot()
    let reads = 1_000_000
    var samples: [Double] = []
    for _ in 0..<rounds {
        var recorded = ReadSet()
        let start = clock.now
        for index in 0..<reads {
            if index % 1_000 == 0 { recorded = ReadSet() }  // a render reads hundreds, not millions
            _ = snapshot.document(index % 1_000 + 1, in: "items", fields: ["title"], reads: &recorded)
        }
        samples.append(nanoseconds(clock.now - start) / Double(reads))
    }
    print(
        "recorded read      \(format(median(samples))) ns per field read through a snapshot (projection of one field)")
}
