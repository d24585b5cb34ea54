/// A query parameter that cannot be used, named so the client can fix it.
public struct QueryError: Error, Equatable, Sendable {
    /// The parameter as the client sent it, e.g. `rating_gt` or `page`.
    public let parameter: String
    public let message: String

    public init(_ parameter: String, _ message: String) {
        self.parameter = String(parameter.prefix(64))
        self.message = message
    }
}
