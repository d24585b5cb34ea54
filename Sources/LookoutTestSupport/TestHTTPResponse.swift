/// One header field exactly as it appeared on the wire.
public struct TestHTTPHeader: Sendable, Equatable {
    /// The field name with the capitalisation the server used.
    public let name: String
    /// The field value with leading and trailing whitespace removed.
    public let value: String

    /// Creates a header field.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// A complete HTTP/1.x response as read by `TestHTTPConnection`.
public struct TestHTTPResponse: Sendable {
    /// The protocol version from the status line, such as `HTTP/1.1`.
    public let version: String
    /// The three-digit status code.
    public let status: Int
    /// The reason phrase, possibly empty.
    public let reason: String
    /// Header fields in wire order, names as sent.
    public let headers: [TestHTTPHeader]
    /// The decoded body: chunked framing removed, empty for HEAD, 1xx, 204 and 304.
    public let body: [UInt8]

    /// Creates a response; the connection builds these, tests rarely need to.
    public init(
        version: String = "HTTP/1.1", status: Int, reason: String,
        headers: [TestHTTPHeader], body: [UInt8]
    ) {
        self.version = version
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
    }

    /// The value of the first header named `name`, compared case-insensitively.
    public func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }

    /// Every value of the headers named `name` (case-insensitive), in wire order.
    public func headers(named name: String) -> [String] {
        let wanted = name.lowercased()
        return headers.filter { $0.name.lowercased() == wanted }.map(\.value)
    }

    /// The body decoded as UTF-8; invalid sequences become U+FFFD.
    public var text: String {
        String(decoding: body, as: UTF8.self)
    }
}

/// How a response body is delimited on the wire.
enum TestHTTPBodyFraming: Equatable {
    case none
    case length(Int)
    case chunked
    case untilClose
}

// Wire-format parsing lives here so the connection only deals with bytes and sockets.
extension TestHTTPResponse {
    private static let cr: UInt8 = 13, lf: UInt8 = 10, space: UInt8 = 32, tab: UInt8 = 9

    /// Parses `HTTP/1.x SP 3DIGIT [SP reason]` (line without its CRLF).
    static func parseStatusLine(_ line: [UInt8]) throws -> (version: String, status: Int, reason: String) {
        let prefix = Array("HTTP/1.".utf8)
        guard line.count >= 12, Array(line[0..<7]) == prefix, isDigit(line[7]), line[8] == space,
            line[9...11].allSatisfy(isDigit)
        else { throw TestHTTPError.malformed("bad status line: \(printable(line))") }
        // RFC 9112 requires the SP even with an empty reason, but tolerating its absence costs nothing.
        guard line.count == 12 || line[12] == space else {
            throw TestHTTPError.malformed("bad status line: \(printable(line))")
        }
        let reasonBytes = line.count > 13 ? Array(line[13...]) : []
        guard reasonBytes.allSatisfy(isFieldByte) else {
            throw TestHTTPError.malformed("control character in reason phrase")
        }
        let status = line[9...11].reduce(0) { $0 * 10 + Int($1 - 48) }
        return (
            String(decoding: line[0..<8], as: UTF8.self), status,
            String(decoding: reasonBytes, as: UTF8.self)
        )
    }

    /// Parses `name ":" OWS value OWS`; rejects obs-fold, whitespace before the colon and control bytes.
    static func parseHeaderLine(_ line: [UInt8]) throws -> TestHTTPHeader {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > 0,
            line[..<colon].allSatisfy(isTokenByte)
        else { throw TestHTTPError.malformed("bad header line: \(printable(line))") }
        var value = line[(colon + 1)...]
        while let first = value.first, first == space || first == tab { value = value.dropFirst() }
        while let last = value.last, last == space || last == tab { value = value.dropLast() }
        guard value.allSatisfy(isFieldByte) else {
            throw TestHTTPError.malformed("control character in header value: \(printable(line))")
        }
        return TestHTTPHeader(
            name: String(decoding: line[..<colon], as: UTF8.self),
            value: String(decoding: value, as: UTF8.self))
    }

    /// Decides body framing per RFC 9112 §6.3, rejecting conflicting or oversized lengths.
    static func framing(status: Int, method: String, headers: [TestHTTPHeader], maxBody: Int) throws
        -> TestHTTPBodyFraming
    {
        if method.uppercased() == "HEAD" || (100..<200).contains(status) || status == 204 || status == 304 {
            return .none
        }
        let probe = TestHTTPResponse(status: status, reason: "", headers: headers, body: [])
        let codings = probe.headers(named: "Transfer-Encoding")
            .flatMap { $0.split(separator: ",") }
            .map { $0.trimmingWhitespace().lowercased() }
        if !codings.isEmpty {
            // A response whose final coding is not chunked can only end at connection close.
            return codings.last == "chunked" ? .chunked : .untilClose
        }
        let lengths = probe.headers(named: "Content-Length")
            .flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
            .map { $0.trimmingWhitespace() }
        guard let first = lengths.first else { return .untilClose }
        guard lengths.allSatisfy({ $0 == first }), (1...18).contains(first.utf8.count),
            first.utf8.allSatisfy(isDigit), let length = Int(first)
        else { throw TestHTTPError.malformed("bad Content-Length: \(lengths)") }
        guard length <= maxBody else {
            throw TestHTTPError.malformed("Content-Length \(length) exceeds limit of \(maxBody) bytes")
        }
        return .length(length)
    }

    /// Parses a chunk-size line (`1*HEXDIG [BWS ";" ext]`), without its CRLF.
    static func parseChunkSize(_ line: [UInt8]) throws -> Int {
        var digits = line.prefix { $0 != UInt8(ascii: ";") }
        while let last = digits.last, last == space || last == tab { digits = digits.dropLast() }
        guard !digits.isEmpty else { throw TestHTTPError.malformed("empty chunk size") }
        var size = 0
        for byte in digits {
            guard let digit = hexValue(byte) else {
                throw TestHTTPError.malformed("bad chunk size: \(printable(line))")
            }
            let (shifted, overflow) = size.multipliedReportingOverflow(by: 16)
            guard !overflow else { throw TestHTTPError.malformed("chunk size overflows") }
            size = shifted + digit
        }
        return size
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (48...57).contains(byte) }

    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case 48...57: Int(byte - 48)
        case 65...70: Int(byte - 55)
        case 97...102: Int(byte - 87)
        default: nil
        }
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 48...57, 65...90, 97...122: true
        default: Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }

    // VCHAR, obs-text, SP and HTAB; anything else is a control byte smuggled into a field.
    private static func isFieldByte(_ byte: UInt8) -> Bool {
        byte == tab || (byte >= space && byte != 127)
    }

    // Error messages must stay readable even when the offending line is binary garbage.
    private static func printable(_ line: [UInt8]) -> String {
        let shown = line.prefix(80).map { (32..<127).contains($0) ? Character(UnicodeScalar($0)) : "?" }
        return String(shown) + (line.count > 80 ? "…" : "")
    }
}

extension Substring {
    /// The substring without leading and trailing spaces and tabs.
    fileprivate func trimmingWhitespace() -> String {
        var result = self
        while let c = result.first, c == " " || c == "\t" { result = result.dropFirst() }
        while let c = result.last, c == " " || c == "\t" { result = result.dropLast() }
        return String(result)
    }
}
