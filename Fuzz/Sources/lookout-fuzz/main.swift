import CLibFuzzer
import LookoutFuzzTargets

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// lookout-fuzz [libFuzzer flags] [corpus directories or files]
// with LOOKOUT_FUZZ_TARGET set to one of FuzzTarget's raw values (json, query, ...), and
// LOOKOUT_FUZZ_AMPLIFY to the size in bytes that marked inputs (RepeatTemplate) are
// expanded to, when not the target's amplifiedSize.
guard Harness.target != nil else {
    let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
    Harness.report("lookout-fuzz: set LOOKOUT_FUZZ_TARGET to one of \(names)")
    exit(2)
}
var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in Harness.testOneInput(data, size) })

/// What the libFuzzer callback reads, outside the main actor that top-level code runs on.
enum Harness {
    static let target = getenv("LOOKOUT_FUZZ_TARGET").flatMap { FuzzTarget(rawValue: String(cString: $0)) }
    static let amplifiedSize = getenv("LOOKOUT_FUZZ_AMPLIFY").flatMap { Int(String(cString: $0)) }

    /// Checks one input, and aborts on a violated property so that libFuzzer keeps the
    /// input as a reproducer.
    static func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
        let input = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
        guard let target else { return 0 }
        do {
            try target.check(input, amplifyingTo: amplifiedSize)
        } catch {
            report("lookout-fuzz \(target.rawValue): property violated: \(error)")
            abort()
        }
        return 0
    }

    /// Writes a line to standard error (descriptor 2: Swift 6 keeps concurrent code off
    /// the C global `stderr`).
    static func report(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    }
}
