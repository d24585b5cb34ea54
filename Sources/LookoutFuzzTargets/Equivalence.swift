import LookoutJSON

/// Whether `a` and `b` mean the same JSON, as `JSONValue.isEquivalent(to:)` decides,
/// in time linear in their size: objects are compared through a dictionary, where
/// `isEquivalent` scans, so that the targets' own checks never make a wide input slow.
func equivalent(_ a: JSONValue, _ b: JSONValue) -> Bool {
    switch (a, b) {
    case (.object(let left), .object(let right)):
        guard left.count == right.count else { return false }
        let members = dictionary(right)
        return left.allSatisfy { member in members[member.key].map { equivalent(member.value, $0) } ?? false }
    case (.array(let left), .array(let right)):
        return left.count == right.count && zip(left, right).allSatisfy { equivalent($0, $1) }
    default:
        return a.isEquivalent(to: b)
    }
}

/// An object's members by key; keys are unique in a `JSONObject`, as they are here
/// (both compare keys as Swift strings).
func dictionary(_ object: JSONObject) -> [String: JSONValue] {
    Dictionary(object.members.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
}
