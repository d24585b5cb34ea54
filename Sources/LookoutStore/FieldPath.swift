import LookoutJSON

/// A field of a document, or a value inside one: `rating`, `address.city`, `tags.0`.
///
/// Only the top-level ``field`` is tracked: reading `address.city` depends on `address`.
public struct FieldPath: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The top-level field.
    public let field: String
    /// Object member names or array indexes below it.
    public let rest: [String]

    /// Splits `text` at each `.`.
    public init(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        field = parts[0]
        rest = Array(parts.dropFirst())
    }

    public init(stringLiteral text: String) {
        self.init(text)
    }

    /// The top-level field `field` itself, even if its name holds a `.`.
    public init(field: String) {
        self.field = field
        self.rest = []
    }

    public var description: String {
        ([field] + rest).joined(separator: ".")
    }

    /// The value at this path below the top-level field's `value`; nil when the path
    /// leads nowhere.
    public func value(below value: JSONValue?) -> JSONValue? {
        var current = value
        for step in rest {
            switch current {
            case .object(let object)?: current = object[step]
            case .array(let array)?:
                guard let index = Int(step), array.indices.contains(index) else { return nil }
                current = array[index]
            default: return nil
            }
        }
        return current
    }
}

/// One key of a sort order: a field path, ascending or descending.
public struct SortKey: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    public let path: FieldPath
    public let descending: Bool

    public init(_ path: FieldPath, descending: Bool = false) {
        self.path = path
        self.descending = descending
    }

    /// `rating` ascends, `-rating` descends.
    public init(parsing text: String) {
        if text.hasPrefix("-") {
            self.init(FieldPath(String(text.dropFirst())), descending: true)
        } else {
            self.init(FieldPath(text))
        }
    }

    public init(stringLiteral text: String) {
        self.init(parsing: text)
    }

    /// `rating` or `-rating`.
    public var description: String {
        (descending ? "-" : "") + path.description
    }

    /// Orders two documents, given their values for `keys` and their ids: key by key in
    /// ``JSONOrder`` (reversed for a descending key), then by id ascending.
    public static func compare(
        _ lhs: (values: [JSONValue?], id: Int),
        _ rhs: (values: [JSONValue?], id: Int),
        by keys: [SortKey]
    ) -> JSONOrder.Comparison {
        for (index, key) in keys.enumerated() {
            switch JSONOrder.compare(lhs.values[index], rhs.values[index]) {
            case .orderedSame: continue
            case .orderedAscending: return key.descending ? .orderedDescending : .orderedAscending
            case .orderedDescending: return key.descending ? .orderedAscending : .orderedDescending
            }
        }
        return lhs.id < rhs.id ? .orderedAscending : (lhs.id > rhs.id ? .orderedDescending : .orderedSame)
    }
}
