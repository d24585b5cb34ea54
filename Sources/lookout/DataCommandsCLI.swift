import ArgumentParser
import Foundation
import LookoutApp

/// `lookout export`: the stored state as a data file, on standard output.
struct Export: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write the stored collections and users as a data file (JSON) to standard output.",
        discussion: "Safe while the server runs. The output can be served with --data-file or imported.")

    @OptionGroup var storage: StorageOptions

    func run() throws {
        let bytes = try reportFailure { try DataCommands.export(try storage.configuration(Environment())) }
        FileHandle.standardOutput.write(Data(bytes))
    }
}

/// `lookout import FILE`: a data file as a new history.
struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Import a data file into the data directory as a new history (a new epoch).",
        discussion: "Stop the server first. Refuses a data directory that already holds state unless --replace.")

    @Argument(help: "The data file (JSON) to import.")
    var file: String

    @Flag(help: "Replace the state the data directory holds.")
    var replace = false

    @OptionGroup var storage: StorageOptions

    func run() throws {
        let counts = try reportFailure {
            try DataCommands.importFile(file, into: try storage.configuration(Environment()), replace: replace)
        }
        print("imported \(counts.collections) collections, \(counts.documents) documents, \(counts.users) users")
    }
}

/// `lookout backup DESTINATION`: an online copy of the database.
struct Backup: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy the database to a new file, consistent at one revision, while the server runs.",
        discussion: "To restore, stop the server and put the copy in the data directory as lookout.sqlite.")

    @Argument(help: "The new file to write; an existing file is never overwritten.")
    var destination: String

    @OptionGroup var storage: StorageOptions

    func run() throws {
        try reportFailure { try DataCommands.backup(try storage.configuration(Environment()), to: destination) }
        print("backed up to \(destination)")
    }
}

/// Runs `body`, turning a failure into a message on standard error and exit status 1.
func reportFailure<Value>(_ body: () throws -> Value) throws -> Value {
    do {
        return try body()
    } catch let error as ValidationError {
        throw error
    } catch {
        FileHandle.standardError.write(Data("lookout: \(error)\n".utf8))
        throw ExitCode.failure
    }
}
