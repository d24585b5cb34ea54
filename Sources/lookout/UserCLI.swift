import ArgumentParser
import Foundation
import LookoutApp
import LookoutAuth

/// `lookout user add|list|remove|passwd`: the users who can log in.
struct UserCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user",
        abstract: "Manage the users who can log in; changes count at once, even while the server runs.",
        subcommands: [Add.self, List.self, Remove.self, Passwd.self, Role.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a user; the password is read from the first line of standard input.")

        @Argument(help: "The user's email (compared without case).")
        var email: String

        @Option(help: "reader, editor or admin.")
        var role: String = "reader"

        @OptionGroup var storage: StorageOptions

        func run() throws {
            guard let role = User.Role(rawValue: role) else {
                throw ValidationError("--role must be reader, editor or admin, not '\(role)'")
            }
            let password = try passwordFromStandardInput()
            try reportFailure {
                try UserCommands.add(
                    email, role: role, password: password, in: try storage.configuration(Environment()))
            }
            print("added \(User.normalize(email)) as \(role.rawValue)")
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the users: email and role, one per line.")

        @OptionGroup var storage: StorageOptions

        func run() throws {
            let users = try reportFailure { try UserCommands.list(in: try storage.configuration(Environment())) }
            for user in users { print("\(user.email)\t\(user.role.rawValue)") }
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Remove a user; their access tokens stay valid until they expire, their refresh tokens stop working.")

        @Argument(help: "The user's email.")
        var email: String

        @OptionGroup var storage: StorageOptions

        func run() throws {
            try reportFailure { try UserCommands.remove(email, in: try storage.configuration(Environment())) }
            print("removed \(User.normalize(email))")
        }
    }

    struct Passwd: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set a user's password, read from the first line of standard input.")

        @Argument(help: "The user's email.")
        var email: String

        @OptionGroup var storage: StorageOptions

        func run() throws {
            let password = try passwordFromStandardInput()
            try reportFailure {
                try UserCommands.passwd(email, password: password, in: try storage.configuration(Environment()))
            }
            print("changed the password of \(User.normalize(email))")
        }
    }
}

extension UserCommand {
    struct Role: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Give a user another role; tokens issued later, refreshed ones included, carry it.")

        @Argument(help: "The user's email.")
        var email: String

        @Argument(help: "reader, editor or admin.")
        var role: String

        @OptionGroup var storage: StorageOptions

        func run() throws {
            guard let role = User.Role(rawValue: role) else {
                throw ValidationError("the role must be reader, editor or admin, not '\(role)'")
            }
            try reportFailure {
                try UserCommands.setRole(email, role: role, in: try storage.configuration(Environment()))
            }
            print("\(User.normalize(email)) is now \(role.rawValue)")
        }
    }
}

/// The first line of standard input: a password is never an argument, where `ps` and
/// shell history would show it.
private func passwordFromStandardInput() throws -> String {
    guard let line = readLine(strippingNewline: true), !line.isEmpty else {
        throw ValidationError("give the password on standard input, e.g. printf '%s\\n' \"$PASSWORD\" | lookout user …")
    }
    return line
}
