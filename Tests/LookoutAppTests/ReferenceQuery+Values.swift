import LookoutJSON

// How the reference reads values: dotted paths, filters, `q`, and the sort order.
extension ReferenceQuery {
    /// The value at a dotted path: object members by name, array elements by index.
    static func value(at path: String, in document: JSONObject) -> JSONValue? {
        let components = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        var current = document[components[0]]
        for component in components.dropFirst() {
            switch current {
            case .object(let object)?:
                current = object[component]
            case .array(let elements)?:
                guard component.allSatisfy(\.isASCIIDigit), let index = Int(component), index < elements.count else {
                    return nil
                }
                current = elements[index]
            default:
                return nil
            }
        }
        return current
    }

    // MARK: - Filters

    /// Several filters must all hold; a repeated `=` or `_like` holds when any of its values
    /// does, a repeated `_ne` when none is equal, a repeated comparison when all hold.
    static func matchesAll(_ filters: [Filter], _ document: JSONObject) -> Bool {
        var byParameter: [String: [Filter]] = [:]
        for filter in filters { byParameter[filter.parameter, default: []].append(filter) }
        return byParameter.values.allSatisfy { group in
            switch group[0].op {
            case .equal, .like: group.contains { holds($0, document) }
            default: group.allSatisfy { holds($0, document) }
            }
        }
    }

    /// Whether one filter holds for one document.
    static func holds(_ filter: Filter, _ document: JSONObject) -> Bool {
        let field = value(at: filter.path, in: document)
        switch filter.op {
        case .equal: return equals(field, filter.value)
        case .notEqual: return !equals(field, filter.value)
        case .like:
            guard case .string(let text)? = field else { return false }
            return likeMatches(pattern: filter.value, text)
        case .greater, .greaterOrEqual, .less, .lessOrEqual:
            guard let order = compare(field, filter.value) else { return false }
            switch filter.op {
            case .greater: return order > 0
            case .greaterOrEqual: return order >= 0
            case .less: return order < 0
            default: return order <= 0
            }
        }
    }

    /// `field=text`, reading the text as the field's own type does.
    static func equals(_ field: JSONValue?, _ text: String) -> Bool {
        switch field {
        case .string(let string)?: return Array(string.unicodeScalars) == Array(text.unicodeScalars)
        case .int, .double: return number(field!).map { value in number(text) == value } ?? false
        case .bool(let flag)?: return text == (flag ? "true" : "false")
        case .null?: return text == "null"
        case nil, .array?, .object?: return false
        }
    }

    /// The field compared with the text read as its type (-1, 0, 1), or nil when they
    /// cannot be compared: a missing field, null, an array or object, unreadable text.
    static func compare(_ field: JSONValue?, _ text: String) -> Int? {
        switch field {
        case .string(let string)?:
            return compareScalars(Array(string.unicodeScalars), Array(text.unicodeScalars))
        case .int?, .double?:
            guard let left = number(field!), let right = number(text) else { return nil }
            return left < right ? -1 : left > right ? 1 : 0
        case .bool(let flag)?:
            // Reading: booleans compare false < true, as they sort.
            guard text == "true" || text == "false" else { return nil }
            let right = text == "true"
            return flag == right ? 0 : (flag ? 1 : -1)
        case nil, .null?, .array?, .object?:
            return nil
        }
    }

    static func number(_ value: JSONValue) -> Double? {
        switch value {
        case .int(let integer): Double(integer)
        case .double(let double): double
        default: nil
        }
    }

    /// Text read as a number. Reading: decimal digits with an optional `-` and fraction,
    /// as in JSON without an exponent (the random queries use nothing else).
    static func number(_ text: String) -> Double? {
        let parts = (text.hasPrefix("-") ? text.dropFirst() : Substring(text))
            .split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCIIDigit) }) else {
            return nil
        }
        return Double(text)
    }

    /// `_like`: the text contains the pattern, ignoring case; `*` is any run, a leading `^`
    /// anchors at the start and a trailing `$` at the end.
    static func likeMatches(pattern: String, _ text: String) -> Bool {
        var body = Substring(pattern)
        let anchoredStart = body.hasPrefix("^")
        if anchoredStart { body = body.dropFirst() }
        let anchoredEnd = body.hasSuffix("$")
        if anchoredEnd { body = body.dropLast() }
        // The same as a glob with `*` added at each end that is not anchored.
        let glob = (anchoredStart ? "" : "*") + String(body) + (anchoredEnd ? "" : "*")
        return globMatches(Array(folded(glob)), Array(folded(text)))
    }

    /// A glob where `*` matches any run of scalars, the empty one included.
    static func globMatches(_ pattern: [Unicode.Scalar], _ text: [Unicode.Scalar]) -> Bool {
        // matches[i][j]: pattern[i...] matches text[j...].
        var matches = Array(repeating: Array(repeating: false, count: text.count + 1), count: pattern.count + 1)
        matches[pattern.count][text.count] = true
        for i in stride(from: pattern.count - 1, through: 0, by: -1) {
            for j in stride(from: text.count, through: 0, by: -1) {
                if pattern[i] == "*" {
                    matches[i][j] = matches[i + 1][j] || (j < text.count && matches[i][j + 1])
                } else {
                    matches[i][j] = j < text.count && pattern[i] == text[j] && matches[i + 1][j + 1]
                }
            }
        }
        return matches[0][0]
    }

    /// `q`: some string value in the document, at any depth, contains the text, ignoring case.
    /// Reading: object keys are not strings of the document.
    static func matchesText(_ text: String, _ document: JSONObject) -> Bool {
        let needle = Array(folded(text))
        return strings(in: .object(document)).contains { contains(Array(folded($0)), needle) }
    }

    /// Whether `needle` occurs in `haystack` as a contiguous run.
    static func contains(_ haystack: [Unicode.Scalar], _ needle: [Unicode.Scalar]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return (0...haystack.count - needle.count).contains { start in
            Array(haystack[start..<start + needle.count]) == needle
        }
    }

    static func strings(in value: JSONValue) -> [String] {
        switch value {
        case .string(let string): [string]
        case .array(let elements): elements.flatMap(strings)
        case .object(let object): object.members.flatMap { strings(in: $0.value) }
        default: []
        }
    }

    /// Text with case ignored, as Unicode scalars.
    static func folded(_ text: String) -> String.UnicodeScalarView {
        text.lowercased().unicodeScalars
    }

    // MARK: - Sort order

    /// Whether `left` comes before `right`: the keys in order, then `id` ascending.
    static func precedes(_ left: JSONObject, _ right: JSONObject, by keys: [SortKey]) -> Bool {
        for key in keys {
            let order = compareForSort(value(at: key.path, in: left), value(at: key.path, in: right))
            if order != 0 { return key.descending ? order > 0 : order < 0 }
        }
        return compareForSort(left["id"], right["id"]) < 0
    }

    /// Missing and null first, then false, true, numbers, strings, arrays, objects.
    static func compareForSort(_ left: JSONValue?, _ right: JSONValue?) -> Int {
        let (leftRank, rightRank) = (sortRank(left), sortRank(right))
        if leftRank != rightRank { return leftRank < rightRank ? -1 : 1 }
        switch (left, right) {
        case (.bool(let a)?, .bool(let b)?):
            return a == b ? 0 : (a ? 1 : -1)
        case (.string(let a)?, .string(let b)?):
            return compareScalars(Array(a.unicodeScalars), Array(b.unicodeScalars))
        case (.array(let a)?, .array(let b)?):
            // Reading: arrays compare element by element, then by length.
            for (x, y) in zip(a, b) {
                let order = compareForSort(x, y)
                if order != 0 { return order }
            }
            return a.count == b.count ? 0 : (a.count < b.count ? -1 : 1)
        case (let a?, let b?) where number(a) != nil && number(b) != nil:
            let (x, y) = (number(a)!, number(b)!)
            return x < y ? -1 : x > y ? 1 : 0
        default:
            // Missing and null tie (Reading); objects among themselves tie (Reading).
            return 0
        }
    }

    private static func sortRank(_ value: JSONValue?) -> Int {
        switch value {
        case nil, .null?: 0
        case .bool?: 1
        case .int?, .double?: 2
        case .string?: 3
        case .array?: 4
        case .object?: 5
        }
    }

    /// Lexicographic order of Unicode scalar values.
    static func compareScalars(_ left: [Unicode.Scalar], _ right: [Unicode.Scalar]) -> Int {
        for (a, b) in zip(left, right) where a != b {
            return a.value < b.value ? -1 : 1
        }
        return left.count == right.count ? 0 : (left.count < right.count ? -1 : 1)
    }
}

extension Character {
    /// `0` to `9` only, unlike `isNumber`.
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
