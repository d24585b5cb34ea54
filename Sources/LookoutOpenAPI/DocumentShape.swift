import LookoutJSON

/// The JSON types a collection's top-level fields hold, inferred from its documents.
///
/// A field seen with one type has that type; with several, the list of them (an integer
/// field that also holds fractions is a number); a field seen holding `null` is nullable.
/// `id` is not a field here: it is always an integer in `DocumentCollection.ids`.
///
/// The server infers a shape per collection at start, describes it in its OpenAPI
/// document, and checks writes against it (``violation(in:removing:)``): a write may add
/// fields the shape does not know, with any type, but may not give a known field a value
/// of another type, so every answer stays true to the document.
public struct DocumentShape: Sendable, Equatable {
    /// A JSON type as JSON Schema names it.
    public enum Kind: String, Sendable, CaseIterable, Comparable {
        case null, boolean, integer, number, string, array, object

        public static func < (lhs: Kind, rhs: Kind) -> Bool {
            allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
        }

        /// The kind of `value`; a number written with a fraction or exponent is `number`.
        public init(of value: JSONValue) {
            switch value {
            case .null: self = .null
            case .bool: self = .boolean
            case .int: self = .integer
            case .double: self = .number
            case .string: self = .string
            case .array: self = .array
            case .object: self = .object
            }
        }
    }

    /// Each field's kinds, by name; `integer` is never listed beside `number`.
    public private(set) var fields: [String: Set<Kind>]

    /// The field names in a stable order (sorted by Unicode scalars).
    public var fieldNames: [String] {
        fields.keys.sorted { $0.unicodeScalars.lexicographicallyPrecedes($1.unicodeScalars) }
    }

    /// The shape of `documents`: every top-level field but `id`, with each type it holds.
    public init(documents: some Sequence<JSONObject>) {
        var fields: [String: Set<Kind>] = [:]
        for document in documents {
            for member in document where member.key != "id" {
                fields[member.key, default: []].insert(Kind(of: member.value))
            }
        }
        for (name, kinds) in fields where kinds.contains(.number) && kinds.contains(.integer) {
            fields[name]?.remove(.integer)
        }
        self.fields = fields
    }

    /// Why `document` does not fit the shape, or nil when it does: the first known field,
    /// in the shape's order, whose value has a type the shape does not give it.
    ///
    /// - Parameter removing: whether `null` means "remove the field" (a JSON merge patch)
    ///   and so always fits.
    /// - Returns: a message naming the field and the types it may hold.
    public func violation(in document: JSONObject, removing: Bool = false) -> String? {
        for member in document where member.key != "id" {
            guard let kinds = fields[member.key] else { continue }
            if removing, member.value == .null { continue }
            if Self.fits(member.value, kinds) { continue }
            let expected = kinds.sorted().map(\.rawValue)
            return
                "'\(member.key)' must be \(Self.phrase(expected)), as in the collection's documents (it was \(Kind(of: member.value).rawValue))."
        }
        return nil
    }

    private static func fits(_ value: JSONValue, _ kinds: Set<Kind>) -> Bool {
        let kind = Kind(of: value)
        if kinds.contains(kind) { return true }
        switch value {
        case .int: return kinds.contains(.number)
        // A number such as 4.0 is an integer to JSON Schema.
        case .double(let number): return kinds.contains(.integer) && number.rounded(.towardZero) == number
        default: return false
        }
    }

    private static func phrase(_ names: [String]) -> String {
        switch names.count {
        case 1: return names[0]
        default: return names.dropLast().joined(separator: ", ") + " or " + names.last!
        }
    }
}
