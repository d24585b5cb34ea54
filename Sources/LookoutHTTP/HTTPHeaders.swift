/// An ordered list of HTTP header fields with case-insensitive lookup.
///
/// Small by design: requests carry a handful of headers, so a linear scan beats hashing.
public struct HTTPHeaders: Sendable, Sequence {
    /// One header field as sent or to be sent.
    public struct Field: Sendable, Equatable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    private var fields: [Field]

    /// Creates headers from name/value pairs, in order.
    public init(_ pairs: [(String, String)] = []) {
        fields = pairs.map { Field(name: $0.0, value: $0.1) }
    }

    /// The value of the first field named `name` (compared case-insensitively), if any.
    public subscript(name: String) -> String? {
        fields.first { Self.namesMatch($0.name, name) }?.value
    }

    /// Every value of the fields named `name`, in order.
    public func values(named name: String) -> [String] {
        fields.filter { Self.namesMatch($0.name, name) }.map(\.value)
    }

    /// Appends a field; an existing field with the same name is kept.
    public mutating func add(_ name: String, _ value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Makes room for `count` fields in all, so that adding them allocates once.
    public mutating func reserveCapacity(_ count: Int) {
        fields.reserveCapacity(count)
    }

    /// Replaces every field named `name` with one field.
    public mutating func set(_ name: String, _ value: String) {
        fields.removeAll { Self.namesMatch($0.name, name) }
        fields.append(Field(name: name, value: value))
    }

    /// Whether a field named `name` is present.
    public func contains(_ name: String) -> Bool {
        self[name] != nil
    }

    public var count: Int { fields.count }

    public func makeIterator() -> IndexingIterator<[Field]> {
        fields.makeIterator()
    }

    /// ASCII case-insensitive comparison: header names are ASCII tokens (RFC 9110 §5.1).
    static func namesMatch(_ lhs: String, _ rhs: String) -> Bool {
        guard lhs.utf8.count == rhs.utf8.count else { return false }
        // Over the contiguous bytes: zipping the two `utf8` views took 8,300 instructions of
        // a single-wake round's 311,000 (Benchmarks/README.md, stop 51).
        var lhs = lhs
        var rhs = rhs
        return lhs.withUTF8 { left in
            rhs.withUTF8 { right in
                for index in left.indices where left[index] != right[index] {
                    let a = left[index] | 0x20
                    guard a == right[index] | 0x20, a >= UInt8(ascii: "a"), a <= UInt8(ascii: "z") else { return false }
                }
                return true
            }
        }
    }
}
