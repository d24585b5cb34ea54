import Foundation
import LookoutFuzzTargets
import Testing

/// Every input kept for the fuzzers, replayed through the same property checks, so CI
/// checks them without a fuzzer build: the seeds and what the fuzzers kept in
/// `Tests/FuzzCorpus/<target>/`, and the cases they found in `Tests/FuzzRegressions/<target>/`.
///
/// Templates are expanded to 16 KiB here, not to the megabyte `make fuzz` uses: the
/// replay checks the properties; whether a large input is slow is the fuzzers' question.
@Suite("Fuzz corpus replay")
struct CorpusReplayTests {
    static let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()

    @Test("every corpus and regression input keeps its target's properties", arguments: FuzzTarget.allCases)
    func replay(_ target: FuzzTarget) throws {
        let corpus = try Self.inputs(in: "FuzzCorpus", target)
        #expect(!corpus.isEmpty, "Tests/FuzzCorpus/\(target.rawValue) holds no seed")
        for file in try corpus + Self.inputs(in: "FuzzRegressions", target) {
            let input = try [UInt8](Data(contentsOf: file))
            do {
                try target.check(input, amplifyingTo: 16 * 1024)
            } catch {
                Issue.record("\(file.path): \(error)")
            }
        }
    }

    /// The files of `Tests/<directory>/<target>/`; none when it does not exist.
    static func inputs(in directory: String, _ target: FuzzTarget) throws -> [URL] {
        let folder = tests.appendingPathComponent(directory).appendingPathComponent(target.rawValue)
        guard FileManager.default.fileExists(atPath: folder.path) else { return [] }
        return try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
            .filter { !$0.lastPathComponent.hasPrefix(".") }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }
}
