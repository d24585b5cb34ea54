/// A JSON object that keeps its members in insertion order, so documents are written
/// back in the order they were given.
///
/// Lookups are linear in time per member read or written, whatever the object's size:
/// small objects (most documents) scan their few members, and an object past
/// ``indexThreshold`` members keeps an index from key to position. Clients choose the
/// size of the objects they send, so a lookup must never be a scan of thousands of keys
/// (a 1 MiB body of small keys would otherwise cost seconds of CPU per request).
/// - Invariant: keys are unique.
public struct JSONObject: Sendable, Sequence {
    /// One member of an object.
    public struct Member: Sendable, Hashable {
        public let key: String
        public var value: JSONValue
    }

    /// Objects with more members than this keep an index; below it a scan is faster.
    static let indexThreshold = 16

    public private(set) var members: [Member]
    /// Position of each key in `members`, kept while there are more than ``indexThreshold``.
    private var positions: [String: Int]?

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
        get { position(of: key).map { members[$0].value } }
        set {
            switch (position(of: key), newValue) {
            case (let index?, let value?):
                members[index].value = value
            case (let index?, nil):
                let removed = members.remove(at: index)
                positions?[removed.key] = nil
                reindex(from: index)
            case (nil, let value?):
                members.append(Member(key: key, value: value))
                if positions != nil {
                    positions![key] = members.count - 1
                } else if members.count > Self.indexThreshold {
                    reindex(from: 0)
                }
            case (nil, nil):
                break
            }
        }
    }

    public var keys: [String] { members.map(\.key) }
    public var count: Int { members.count }
    public var isEmpty: Bool { members.isEmpty }

    public func makeIterator() -> IndexingIterator<[Member]> {
        members.makeIterator()
    }

    private func position(of key: String) -> Int? {
        if let positions { return positions[key] }
        return members.firstIndex { $0.key == key }
    }

    /// Brings the index up to date for members from `start` on (after a removal, or when
    /// the object grows past the threshold), or drops it when the object is small again.
    private mutating func reindex(from start: Int) {
        guard members.count > Self.indexThreshold else {
            positions = nil
            return
        }
        let start = positions == nil ? 0 : start
        if positions == nil { positions = Dictionary(minimumCapacity: members.count) }
        for index in start..<members.count { positions![members[index].key] = index }
    }
}

extension JSONObject: Hashable {
    /// Objects are equal when their members are, in order; the index is not part of the value.
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.members == rhs.members
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(members)
    }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(elements)
    }
}
