/// The decoded `name=value` pairs of a query string, in order.
///
/// `+` means a space and `%XX` a byte, as browsers and curl encode them; a malformed
/// escape is kept literally rather than refused. Never fails: any text is a query.
///
/// ```swift
/// let query = QueryParameters("q=caf%C3%A9+au+lait&page=2")
/// query["q"]  // "café au lait"
/// ```
public struct QueryParameters: Sendable {
    /// Decoded, in order.
    public let pairs: [(name: String, value: String)]
    /// The query as sent, still encoded.
    private let raw: Substring

    /// Each `name=value` item as sent, still encoded; `pairs[i]` is `items[i]` decoded.
    /// Split again when asked, rather than kept: a held poll keeps its query.
    public var items: [Substring] { raw.splitting(at: "&") }

    /// Splits `query` (the target's part after `?`, still encoded) at `&` and decodes it.
    public init(_ query: Substring) {
        raw = query
        pairs = query.splitting(at: "&").map { item in
            let (name, value) = item.splittingOnce(at: "=")
            return (Self.decode(name), value.map { Self.decode($0) } ?? "")
        }
    }

    /// The items as sent whose names are not in `excluded`, joined by `&`.
    public func encoded(excluding excluded: Set<String>) -> String {
        if pairs.isEmpty { return "" }
        let items = items
        if items.count == 1, !excluded.contains(pairs[0].name) { return String(items[0]) }
        // Items are never empty (the split leaves empty ones out), so an empty result
        // means nothing kept yet.
        var kept = ""
        for (item, pair) in zip(items, pairs) where !excluded.contains(pair.name) {
            if !kept.isEmpty { kept += "&" }
            kept += item
        }
        return kept
    }

    /// The first value given for `name`.
    public subscript(name: String) -> String? {
        pairs.first { $0.name == name }?.value
    }

    /// Percent-decodes `text`, and reads `+` as a space when `plusIsSpace` (query strings
    /// and form bodies; not paths). Bytes that are not UTF-8 become U+FFFD.
    public static func decode(_ text: Substring, plusIsSpace: Bool = true) -> String {
        guard text.utf8.contains(where: { $0 == UInt8(ascii: "%") || (plusIsSpace && $0 == UInt8(ascii: "+")) }) else {
            return String(text)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = Array(text.utf8)[...]
        while let byte = iterator.popFirst() {
            if byte == UInt8(ascii: "+"), plusIsSpace {
                bytes.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%"), iterator.count >= 2,
                let high = hexValue(iterator[iterator.startIndex]),
                let low = hexValue(iterator[iterator.startIndex + 1])
            {
                bytes.append(high << 4 | low)
                iterator.removeFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
