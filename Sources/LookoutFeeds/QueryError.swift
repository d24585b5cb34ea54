/// A query parameter that cannot be used, named so the client can fix it.
public struct QueryError: Error, Equatable, Sendable {
    /// The parameter as the client sent it, e.g. `rating_gt` or `page`.
    public let parameter: String
    public let message: String
    /// Whether the parameter would be fine with a token: it names a field that is not
    /// public, or the collection has none. A client fixes it by authenticating.
    public let needsToken: Bool

    public init(_ parameter: String, _ message: String) {
        self.parameter = String(parameter.prefix(64))
        self.message = message
        self.needsToken = false
    }

    init(needingToken parameter: String, _ message: String) {
        self.parameter = String(parameter.prefix(64))
        self.message = message
        self.needsToken = true
    }

    /// `parameter` names `field` of `collection`, which only a token holder may read.
    public static func tokenRequired(_ parameter: String, field: String, of collection: String) -> QueryError {
        QueryError(
            needingToken: parameter,
            "'\(field.prefix(64))' is not a public field of \(collection); send a token (Authorization: Bearer) to \(use(parameter)) it."
        )
    }

    /// Reading `collection` at all needs a token: it has no public fields.
    public static func tokenRequired(collection: String) -> QueryError {
        QueryError(
            needingToken: collection,
            "\(collection) has no public fields; send a token (Authorization: Bearer) to read it.")
    }

    private static func use(_ parameter: String) -> String {
        switch parameter {
        case "sort": "sort by"
        case "fields", "expand", "read": "read"
        case "q": "search"
        default: "filter on"
        }
    }
}
