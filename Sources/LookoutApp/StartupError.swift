/// Why the service could not start. The message is for the operator and names the
/// file or setting at fault.
public struct StartupError: Error, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
