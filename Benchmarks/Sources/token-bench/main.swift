// Token costs in-process: verifying and issuing access tokens (HS256 and EdDSA), per
// core, and one password check at the scrypt parameters Lookout uses, beside cheaper and
// dearer ones to show the choice.
//
//   swift run -c release --package-path Benchmarks token-bench [seconds-per-run] [profile]
//
// With `profile`, only HS256 verification on one thread runs, for perf.
import Dispatch
import Foundation
import LookoutAuth
import Synchronization

let seconds = CommandLine.arguments.count > 1 ? Double(CommandLine.arguments[1])! : 3
let cores = ProcessInfo.processInfo.activeProcessorCount
let clock = ContinuousClock()
let user = User(
    email: "demo@example.com", role: .reader, passwordHash: try PasswordHash.make(password: "x", logRounds: 1))

/// Runs `work` on `threads` threads for `seconds`; operations per second, in total.
func throughput(threads: Int, _ work: @escaping @Sendable () -> Void) -> Double {
    let deadline = clock.now + .milliseconds(Int(seconds * 1000))
    let counts = UnsafeMutableBufferPointer<Int>.allocate(capacity: threads)
    defer { counts.deallocate() }
    nonisolated(unsafe) let shared = counts
    let started = clock.now
    DispatchQueue.concurrentPerform(iterations: threads) { thread in
        var done = 0
        while clock.now < deadline {
            for _ in 0..<64 { work() }
            done += 64
        }
        shared[thread] = done
    }
    let elapsed = clock.now - started
    let total = Double(counts.reduce(0, +))
    return total / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
}

func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
}

func column(_ value: Double, digits: Int = 0, width: Int = 10) -> String {
    let text = String(format: "%.\(digits)f", value)
    return String(repeating: " ", count: max(0, width - text.count)) + text
}

if CommandLine.arguments.dropFirst(2).first == "profile" {
    let tokens = TokenService(keys: SigningKeys(fixed: KeyRing(.generate())), now: Date.init)
    let token = tokens.issue(for: user).token
    print("verify HS256, 1 thread: \(Int(throughput(threads: 1) { _ = try! tokens.verify(token) })) per second")
    exit(0)
}

print("machine: \(cores) cores; \(Int(seconds)) s per run")
print("")
print("operation                      alg     threads       ops/s   per thread")
/// More distinct tokens than the verified-token cache holds (2 × 10,000), so cycling
/// through them checks a signature every time.
let distinct = 50_000
for algorithm in SigningKey.Algorithm.allCases {
    let tokens = TokenService(keys: SigningKeys(fixed: KeyRing(.generate(algorithm))), now: Date.init)
    let token = tokens.issue(for: user).token
    let many = (0..<distinct).map { _ in tokens.issue(for: user).token }
    let name = algorithm.rawValue.padding(toLength: 6, withPad: " ", startingAt: 0)
    for threads in Set([1, cores]).sorted() {
        let next = Atomic<Int>(0)
        let cold = throughput(threads: threads) {
            _ = try! tokens.verify(many[next.add(1, ordering: .relaxed).oldValue % distinct])
        }
        print(
            "verify, a new token each time  \(name)  \(column(Double(threads), width: 6))\(column(cold, width: 12))   \(column(cold / Double(threads)))"
        )
        let warm = throughput(threads: threads) { _ = try! tokens.verify(token) }
        print(
            "verify, the same token again   \(name)  \(column(Double(threads), width: 6))\(column(warm, width: 12))   \(column(warm / Double(threads)))"
        )
    }
    let issued = throughput(threads: 1) { _ = tokens.issue(for: user) }
    print(
        "issue                          \(name)  \(column(1, width: 6))\(column(issued, width: 12))   \(column(issued))"
    )
}

print("")
print("scrypt (one password check; r=8, p=1)   memory   median ms   min ms")
for logRounds in [14, 15, 16] {
    let hash = try PasswordHash.make(password: "correct horse", logRounds: logRounds)
    var times: [Double] = []
    for _ in 0..<7 {
        let start = clock.now
        precondition(hash.matches("correct horse"))
        times.append(milliseconds(clock.now - start))
    }
    times.sort()
    let marker = logRounds == 15 ? "  <- Lookout's" : ""
    let memory = 128 * 8 * (1 << logRounds) / (1 << 20)
    print(
        "ln=\(logRounds) (N=\(1 << logRounds))                       \(column(Double(memory), width: 4)) MiB \(column(times[3], digits: 1, width: 10)) \(column(times[0], digits: 1, width: 8))\(marker)"
    )
}
