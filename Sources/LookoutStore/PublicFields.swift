/// Which top-level fields of a collection anyone may read without a token: the
/// collection's `"public"` option in the data file.
///
/// Secure by default: a collection that declares nothing (or a stored collection no
/// longer declared) has no public fields. `id` is public whenever any field is.
public enum PublicFields: Sendable, Equatable {
    /// `"public": false`, or no `"public"` at all: reading anything needs a token.
    case none
    /// `"public": true`: every field, to anyone.
    case all
    /// `"public": ["a", "b"]`: these fields and `id`, to anyone. Names in the order
    /// declared, without repeats and without `id`.
    case only([String])

    /// The fields `names` (and `id`) made public; repeats and `id` itself are dropped.
    public static func fields(_ names: [String]) -> PublicFields {
        var kept: [String] = []
        for name in names where name != "id" && !kept.contains(name) { kept.append(name) }
        return .only(kept)
    }

    /// Whether anyone may read the top-level field `name`.
    public func contains(_ name: String) -> Bool {
        switch self {
        case .none: false
        case .all: true
        case .only(let names): name == "id" || names.contains(name)
        }
    }
}
