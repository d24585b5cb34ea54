import ArgumentParser

/// The `lookout` command: serves by default; subcommands manage the service.
@main
struct Lookout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lookout",
        abstract: "An HTTP JSON service whose every GET can wait for a change to exactly what it read.",
        discussion: "Every option can also be set by the environment variable named in its help; the flag wins.",
        subcommands: [
            Serve.self, Export.self, Import.self, Backup.self, UserCommand.self, KeysCommand.self, OpenAPIDocument.self,
        ],
        defaultSubcommand: Serve.self)
}
