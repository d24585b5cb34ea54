/// A JSON object that keeps its members in insertion order, so documents are written
/// back in the order they were given.
///
/// Lookups scan linearly: documents have a handful of fields, where a scan beats hashing.
/// - Invariant: keys are unique.
public struct JSONObject: Sendable, Hashable, Sequence {
    /// One member of an object.
    public struct Member: Sendable, Hashable {
        public let key: String
        public var value: JSONValue
    }

    public private(set) var members: [Member]

    public init() {
        members = []
    }

    /// Creates an object from pairs; a repeated key keeps its last value.
    public init(_ pairs: [(String, JSONValue)]) {
        members = []
        members.reserveCapacity(pairs.count)
        for (key, value) in pairs {
            self[key] = value
        }
    }

    /// The value of `key`; assigning nil removes the member, assigning a new key appends it.
    public subscript(key: String) -> JSONValue? {
        get { members.first { $0.key == key }?.value }
        set {
            let index = members.firstIndex { $0.key == key }
            switch (index, newValue) {
            case (let index?, let value?): members[index].value = value
            case (let index?, nil): members.remove(at: index)
            case (nil, let value?): members.append(Member(key: key, value: value))
            case (nil, nil): break
            }
        }
    }

    public var keys: [String] { members.map(\.key) }
    public var count: Int { members.count }
    public var isEmpty: Bool { members.isEmpty }

    public func makeIterator() -> IndexingIterator<[Member]> {
        members.makeIterator()
    }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(elements)
    }
}
