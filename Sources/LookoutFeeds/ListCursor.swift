import LookoutJSON
import LookoutStore

/// Where a cursor page ends: the last document's sort values and id, under the sort it
/// was made with. The next page starts after that position, wherever it now is, so
/// documents inserted or deleted before it do not shift what comes next.
///
/// On the wire it is base64url (no padding) of the JSON array `[sort, values..., id]`.
public struct ListCursor: Sendable, Equatable {
    /// The sort it was made with, as `rating,-name`.
    public let sort: String
    public let values: [JSONValue?]
    public let id: Int

    public init(sort: [SortKey], values: [JSONValue?], id: Int) {
        self.sort = Self.signature(sort)
        self.values = values
        self.id = id
    }

    static func signature(_ sort: [SortKey]) -> String {
        sort.map(\.description).joined(separator: ",")
    }

    public var encoded: String {
        let array: [JSONValue] = [.string(sort)] + values.map { $0 ?? .null } + [.int(id)]
        return Base64URL.encode(JSONWriter.encode(.array(array)))
    }

    /// Reads a cursor made for `sort`.
    /// - Throws: ``QueryError`` on `after` for anything that is not such a cursor.
    public init(decoding text: String, for sort: [SortKey]) throws(QueryError) {
        let malformed = QueryError("after", "is not a cursor from a Link header of this list.")
        guard text.utf8.count <= 4096, let bytes = Base64URL.decode(text),
            case .array(let array)? = try? JSONParser.parse(bytes), array.count == sort.count + 2,
            case .string(let signature) = array[0], case .int(let id) = array[array.count - 1]
        else { throw malformed }
        guard signature == Self.signature(sort) else {
            throw QueryError(
                "after",
                "this cursor was made for sort=\(signature.isEmpty ? "id" : signature); send that sort with it.")
        }
        self.sort = signature
        self.values = array[1..<(array.count - 1)].map { $0 == .null ? nil : $0 }
        self.id = id
    }
}

/// Base64 with the URL-safe alphabet and no padding (RFC 4648 §5), so a cursor needs no
/// escaping in a query.
enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            var word = 0
            for (offset, byte) in chunk.enumerated() { word |= Int(byte) << (16 - 8 * offset) }
            for position in 0...chunk.count { output.append(alphabet[(word >> (18 - 6 * position)) & 63]) }
            index += 3
        }
        return String(decoding: output, as: UTF8.self)
    }

    static func decode(_ text: String) -> [UInt8]? {
        var values: [Int] = []
        for byte in text.utf8 {
            guard let value = alphabet.firstIndex(of: byte) else { return nil }
            values.append(value)
        }
        guard values.count % 4 != 1 else { return nil }
        var output: [UInt8] = []
        var index = 0
        while index < values.count {
            let group = values[index..<min(index + 4, values.count)]
            var word = 0
            for (offset, value) in group.enumerated() { word |= value << (18 - 6 * offset) }
            for position in 0..<(group.count - 1) { output.append(UInt8((word >> (16 - 8 * position)) & 255)) }
            index += 4
        }
        return output
    }
}
