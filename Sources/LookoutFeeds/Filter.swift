import LookoutJSON
import LookoutStore

/// One filter of a list query: `field=value`, `field_gte=value`, ... over a field path.
///
/// A filter reads its text as the field's own type: a string field compares with the
/// text as given, a number field with the text read as a JSON number, a boolean with
/// `true`/`false`, a null with `null`. Text that cannot be read so, or a missing field,
/// does not match (but does match `_ne`).
public struct Filter: Sendable {
    public enum Operator: String, Sendable, CaseIterable {
        case equal = ""
        case notEqual = "ne"
        case greater = "gt"
        case atLeast = "gte"
        case less = "lt"
        case atMost = "lte"
        case like
    }

    public let path: FieldPath
    public let op: Operator
    /// The texts given, in order; repeating `=` or `_like` means any of them, any other
    /// operator all of them.
    public private(set) var values: [String]
    /// ``values`` read as every type a field may have, once: a list query compares them
    /// with every document of the collection.
    private var operands: [Operand]
    private var patterns: [LikePattern]

    init(path: FieldPath, op: Operator, value: String) {
        self.path = path
        self.op = op
        self.values = [value]
        self.operands = [Operand(value)]
        self.patterns = op == .like ? [LikePattern(value)] : []
    }

    mutating func add(_ value: String) {
        values.append(value)
        operands.append(Operand(value))
        if op == .like { patterns.append(LikePattern(value)) }
    }

    /// Whether a document whose value at ``path`` is `value` passes.
    public func matches(_ value: JSONValue?) -> Bool {
        switch op {
        case .equal: operands.contains { Self.compare(value, $0) == .orderedSame }
        case .notEqual: !operands.contains { Self.compare(value, $0) == .orderedSame }
        case .greater: operands.allSatisfy { Self.compare(value, $0) == .orderedDescending }
        case .atLeast: operands.allSatisfy { Self.compare(value, $0).map { $0 != .orderedAscending } ?? false }
        case .less: operands.allSatisfy { Self.compare(value, $0) == .orderedAscending }
        case .atMost: operands.allSatisfy { Self.compare(value, $0).map { $0 != .orderedDescending } ?? false }
        case .like:
            if case .string(let text)? = value {
                patterns.contains { $0.matches(text) }
            } else {
                false
            }
        }
    }

    /// `value` against `operand` read as `value`'s type; nil when they cannot be compared.
    private static func compare(_ value: JSONValue?, _ operand: Operand) -> JSONOrder.Comparison? {
        guard let value, let other = operand.read(as: value) else { return nil }
        return JSONOrder.compare(value, other)
    }
}

/// A filter's text as each JSON type it can be read as, read when the query is parsed.
private struct Operand: Sendable {
    let string: JSONValue
    /// JSON's number grammar, nothing looser ("inf", "0x10" and " 1" are not numbers).
    let number: JSONValue?
    let bool: JSONValue?
    let null: JSONValue?

    init(_ text: String) {
        string = .string(text)
        switch try? JSONParser.parse(text) {
        case let parsed? where parsed.isNumber: number = parsed
        default: number = nil
        }
        bool = text == "true" ? .bool(true) : (text == "false" ? .bool(false) : nil)
        null = text == "null" ? .null : nil
    }

    /// The text as a value of `value`'s type, or nil when it is not one.
    func read(as value: JSONValue) -> JSONValue? {
        switch value {
        case .string: string
        case .int, .double: number
        case .bool: bool
        case .null: null
        case .array, .object: nil
        }
    }
}

extension JSONValue {
    fileprivate var isNumber: Bool {
        switch self {
        case .int, .double: true
        default: false
        }
    }
}

/// A `_like` pattern: the text contains it, ignoring case; `*` matches any run of
/// characters, a leading `^` anchors it at the start and a trailing `$` at the end.
///
/// Matched on lowercased UTF-8 bytes, which is exact for UTF-8 (a character's bytes never
/// match inside another's), in time linear in the text times the pattern's pieces: no
/// backtracking a hostile pattern could blow up.
struct LikePattern: Sendable {
    private let pieces: [[UInt8]]
    private let anchoredStart: Bool
    private let anchoredEnd: Bool

    init(_ pattern: String) {
        var text = Substring(pattern.lowercased())
        anchoredStart = text.hasPrefix("^")
        if anchoredStart { text = text.dropFirst() }
        anchoredEnd = text.hasSuffix("$")
        if anchoredEnd { text = text.dropLast() }
        pieces = text.split(separator: "*", omittingEmptySubsequences: false).map { Array($0.utf8) }
    }

    /// Whether `text` (lowercased) contains `piece` (lowercased), comparing scalars, as
    /// `q` searches.
    static func contains(_ piece: [UInt8], in text: String) -> Bool {
        withLowercasedUTF8(text) { find(piece, in: $0, from: 0) != nil }
    }

    func matches(_ text: String) -> Bool {
        Self.withLowercasedUTF8(text) { matches(lowercased: $0) }
    }

    /// Calls `body` with `text` lowercased, as UTF-8. ASCII text (most text a filter scans
    /// over thousands of documents) is lowercased byte by byte into temporary storage,
    /// without making a lowercased `String` and an array of it for each document.
    private static func withLowercasedUTF8<R>(_ text: String, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        let ascii = text.utf8.withContiguousStorageIfAvailable { utf8 -> R? in
            guard utf8.allSatisfy({ $0 < 0x80 }) else { return nil }
            return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: utf8.count) { buffer in
                for (index, byte) in utf8.enumerated() {
                    buffer[index] = (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
                }
                return body(UnsafeBufferPointer(buffer))
            }
        }
        if let result = ascii ?? nil { return result }
        return Array(text.lowercased().utf8).withUnsafeBufferPointer(body)
    }

    private func matches(lowercased subject: UnsafeBufferPointer<UInt8>) -> Bool {
        var start = 0
        for (index, piece) in pieces.enumerated() {
            let isFirst = index == 0
            let isLast = index == pieces.count - 1
            if isLast && anchoredEnd {
                // The last piece sits at the very end, after everything matched so far.
                guard subject.count - piece.count >= start else { return false }
                let tail = subject.count - piece.count
                if isFirst && anchoredStart && tail != 0 { return false }
                return subject[tail...].elementsEqual(piece)
            }
            if isFirst && anchoredStart {
                guard subject.count >= piece.count, subject[..<piece.count].elementsEqual(piece) else { return false }
                start = piece.count
                continue
            }
            guard let found = Self.find(piece, in: subject, from: start) else { return false }
            start = found + piece.count
        }
        return true
    }

    /// The first index at or after `start` where `piece` occurs in `subject`.
    private static func find(_ piece: [UInt8], in subject: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        guard !piece.isEmpty else { return start }
        guard subject.count >= piece.count else { return nil }
        var index = start
        while index <= subject.count - piece.count {
            if subject[index] == piece[0], subject[index..<(index + piece.count)].elementsEqual(piece) {
                return index
            }
            index += 1
        }
        return nil
    }
}
