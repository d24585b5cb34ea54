import ArgumentParser
import Foundation
import LookoutApp

/// `lookout openapi`: the OpenAPI document on standard output.
struct OpenAPIDocument: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "openapi",
        abstract: "Write the OpenAPI 3.1 document a server started on the data file serves at /openapi.json.",
        discussion: """
            Describes the data file's collections (the demo data without --data-file). A running server \
            describes the documents it held when it started.
            """)

    @OptionGroup var storage: StorageOptions

    @Option(help: "The longest wait a long-poll may ask for, in seconds. [env: LOOKOUT_MAX_WAIT, default: 300]")
    var maxWait: Int?

    func run() throws {
        let environment = Environment()
        var configuration = try storage.configuration(environment)
        if let seconds = try maxWait ?? environment.int("LOOKOUT_MAX_WAIT") {
            guard seconds > 0 else { throw ValidationError("--max-wait must be positive") }
            configuration.maxWaitSeconds = Double(seconds)
        }
        let bytes = try reportFailure { try OpenAPICommand.document(configuration) }
        FileHandle.standardOutput.write(Data(bytes))
    }
}
