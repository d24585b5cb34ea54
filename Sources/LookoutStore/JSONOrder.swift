import LookoutJSON

/// The order used to sort documents by a field: missing and null first, then booleans,
/// numbers, strings (by Unicode scalars), and arrays and objects as equal.
public enum JSONOrder {
    public enum Comparison: Sendable {
        case orderedAscending, orderedSame, orderedDescending
    }

    public static func compare(_ lhs: JSONValue?, _ rhs: JSONValue?) -> Comparison {
        let left = rank(lhs)
        let right = rank(rhs)
        if left != right { return left < right ? .orderedAscending : .orderedDescending }
        switch (lhs, rhs) {
        case (.bool(let a)?, .bool(let b)?): return order(a ? 1 : 0, b ? 1 : 0)
        case (.string(let a)?, .string(let b)?):
            // By scalars throughout: String's == would call canonically equivalent texts equal.
            return compareScalars(a, b)
        case (let a?, let b?):
            if let x = number(a), let y = number(b) { return order(x, y) }
            return .orderedSame
        default: return .orderedSame
        }
    }

    /// Orders two texts by their Unicode scalars, as UTF-8 bytes: UTF-8 keeps the order of
    /// the scalars it encodes, and comparing bytes in place is several times quicker than
    /// decoding scalars (a list sorted by a string field compares thousands of pairs).
    private static func compareScalars(_ a: String, _ b: String) -> Comparison {
        let inPlace = a.utf8.withContiguousStorageIfAvailable { left in
            b.utf8.withContiguousStorageIfAvailable { right in
                for index in 0..<min(left.count, right.count) where left[index] != right[index] {
                    return left[index] < right[index] ? Comparison.orderedAscending : .orderedDescending
                }
                return order(left.count, right.count)
            }
        }
        if let result = inPlace ?? nil { return result }
        if a.utf8.elementsEqual(b.utf8) { return .orderedSame }
        return a.utf8.lexicographicallyPrecedes(b.utf8) ? .orderedAscending : .orderedDescending
    }

    private static func order<T: Comparable>(_ a: T, _ b: T) -> Comparison {
        a < b ? .orderedAscending : (a > b ? .orderedDescending : .orderedSame)
    }

    private static func number(_ value: JSONValue) -> Double? {
        switch value {
        case .int(let integer): Double(integer)
        case .double(let double): double
        default: nil
        }
    }

    private static func rank(_ value: JSONValue?) -> Int {
        switch value {
        case nil, .null?: 0
        case .bool?: 1
        case .int?, .double?: 2
        case .string?: 3
        case .array?: 4
        case .object?: 5
        }
    }
}
