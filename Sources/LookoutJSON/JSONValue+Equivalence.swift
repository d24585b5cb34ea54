extension JSONValue {
    /// Whether two values mean the same JSON: numbers compare by value (`1` and `1.0`
    /// alike), strings by Unicode scalars, and object members regardless of order.
    public func isEquivalent(to other: JSONValue) -> Bool {
        switch (self, other) {
        case (.int(let a), .int(let b)): return a == b
        case (.int(let a), .double(let b)), (.double(let b), .int(let a)): return Double(a) == b && Int(exactly: b) == a
        case (.double(let a), .double(let b)): return a == b
        // Swift's String == is canonical equivalence ("é" and "e" + U+0301 alike); JSON
        // text that differs in its scalars is a different value and must be stored.
        case (.string(let a), .string(let b)): return a.unicodeScalars.elementsEqual(b.unicodeScalars)
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.isEquivalent(to: $1) }
        case (.object(let a), .object(let b)):
            return a.count == b.count
                && a.allSatisfy { member in b[member.key].map { member.value.isEquivalent(to: $0) } ?? false }
        default: return self == other
        }
    }
}
