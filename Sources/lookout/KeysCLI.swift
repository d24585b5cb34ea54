import ArgumentParser
import Foundation
import LookoutAuth

/// `lookout keys list|rotate`: the token signing keys in the data directory.
struct KeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keys",
        abstract: "Manage the token signing keys kept in the data directory.",
        subcommands: [List.self, Rotate.self])

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the keys, active first: kid, algorithm, created, retired (ISO 8601, UTC).")

        @OptionGroup var storage: StorageOptions

        func run() throws {
            let directory = try storage.configuration(Environment()).dataDirectory
            let ring = try reportFailure {
                guard let ring = try KeyRingFile(directory: directory).load() else {
                    throw ValidationError("no signing keys in \(directory) yet: start the server once first")
                }
                return ring
            }
            for entry in ring.entries {
                let state = entry.retired.map { "retired \(timestamp($0))" } ?? "active"
                print("\(entry.key.id)\t\(entry.key.algorithm.rawValue)\tcreated \(timestamp(entry.created))\t\(state)")
            }
        }
    }

    struct Rotate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a new active key; the old one still verifies the tokens it signed until they expire.",
            discussion: """
                A running server signs with the new key within a second. Keys retired longer \
                ago than --keep-retired are dropped: keep it above the token lifetime.
                """)

        @Option(help: "HS256 or EdDSA. [default: the active key's]")
        var algorithm: String?

        @Option(help: "Seconds a retired key is kept to verify the tokens it signed.")
        var keepRetired: Int = 86_400

        @OptionGroup var storage: StorageOptions

        func run() throws {
            let algorithm = try algorithm.map { try SigningKey.Algorithm(argument: $0) }
            guard keepRetired >= 0 else { throw ValidationError("--keep-retired must not be negative") }
            let directory = try storage.configuration(Environment()).dataDirectory
            let ring = try reportFailure {
                try KeyRingFile(directory: directory).rotate(
                    to: algorithm, now: Date(), keepRetired: .seconds(keepRetired))
            }
            print("\(ring.active.id)\t\(ring.active.algorithm.rawValue)\tactive")
        }
    }
}

private func timestamp(_ date: Date) -> String {
    date.formatted(.iso8601)
}

extension SigningKey.Algorithm {
    /// Parses a command-line value, case-insensitively.
    init(argument: String) throws {
        guard let algorithm = Self.allCases.first(where: { $0.rawValue.lowercased() == argument.lowercased() }) else {
            throw ValidationError("the token algorithm must be HS256 or EdDSA, not '\(argument)'")
        }
        self = algorithm
    }
}
