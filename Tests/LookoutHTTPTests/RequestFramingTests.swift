import Foundation
import LookoutHTTP
import LookoutTestSupport
import Testing

/// Request framing as RFC 9112 §6.3 has it, over raw sockets (issue 16): every request
/// whose length or form two parsers could read differently is refused with one clean
/// answer that closes the connection, and nothing after it on the connection is answered.
@Suite("Request framing", .timeLimit(.minutes(1)))
struct RequestFramingTests {
    /// A request the server must refuse: the status it answers, and the refusal's code as
    /// `TestResponder` echoes it.
    struct Refused: CustomTestStringConvertible, Sendable {
        let name: String
        let bytes: [UInt8]
        let status: Int
        let code: String
        var testDescription: String { name }

        init(_ name: String, _ text: String, _ status: Int, _ code: String) {
            self.init(name, Array(text.utf8), status, code)
        }

        init(_ name: String, _ bytes: [UInt8], _ status: Int, _ code: String) {
            self.name = name
            self.bytes = bytes
            self.status = status
            self.code = code
        }
    }

    /// After each, a second request that must never be answered: a smuggled one.
    static let smuggled = "GET /echo?smuggled HTTP/1.1\r\nHost: x\r\n\r\n"

    static let refused: [Refused] = [
        Refused(
            "two different Content-Length",
            "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 30\r\n\r\nab",
            400, "malformed_request"),
        Refused(
            "two equal Content-Length",
            "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nab",
            400, "malformed_request"),
        Refused(
            "Content-Length with Transfer-Encoding",
            "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400,
            "malformed_request"),
        Refused(
            "space before the colon", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length : 30\r\n\r\n", 400,
            "malformed_request"),
        Refused(
            "Content-Length -1", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400,
            "malformed_request"),
        Refused(
            "Content-Length +30", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: +30\r\n\r\n", 400,
            "malformed_request"),
        Refused(
            "Content-Length 0x1e", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 0x1e\r\n\r\n", 400,
            "malformed_request"),
        Refused(
            "Content-Length as a list", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 30, 30\r\n\r\n", 400,
            "malformed_request"),
        Refused(
            "Content-Length over 2^64",
            "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 18446744073709551617\r\n\r\n", 400,
            "malformed_request"),
        Refused(
            "Transfer-Encoding gzip", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501,
            "unsupported_transfer_coding"),
        Refused(
            "Transfer-Encoding chunked, identity",
            "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n", 501,
            "unsupported_transfer_coding"),
        Refused(
            "Transfer-Encoding in HTTP/1.0", "POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400,
            "malformed_request"),
        Refused(
            "a 100 KB chunk extension",
            "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2;\(String(repeating: "a", count: 100_000))\r\nab\r\n0\r\n\r\n",
            400, "malformed_request"),
        Refused(
            "chunk data not followed by CRLF",
            "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n",
            400, "malformed_request"),
        Refused(
            "a chunk size that is not hexadecimal",
            "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2 \r\nab\r\n0\r\n\r\n", 400,
            "malformed_request"),
        Refused(
            "whitespace after Transfer-Encoding (libmicrohttpd would read another coding)",
            "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\t\r\n\r\n0\r\n\r\n", 400, "malformed_request"),
        Refused(
            "whitespace after Content-Length", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3 \r\n\r\nabc", 400,
            "malformed_request"),
        Refused(
            "too many trailer fields",
            "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\((0..<17).map { "T\($0): 1\r\n" }.joined())\r\n",
            431, "header_fields_too_large"),
        Refused("a tab in the request line", "GET\t/echo HTTP/1.1\r\nHost: x\r\n\r\n", 400, "malformed_request"),
        Refused("two spaces in the request line", "GET  /echo HTTP/1.1\r\nHost: x\r\n\r\n", 400, "malformed_request"),
        Refused(
            "NUL in a header value",
            Array("GET /echo HTTP/1.1\r\nHost: x\r\nX-A: a".utf8) + [0] + Array("b\r\n\r\n".utf8), 400,
            "malformed_request"),
        Refused(
            "a bare CR in a header value", "GET /echo HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n", 400,
            "malformed_request"),
        Refused("an empty header name", "GET /echo HTTP/1.1\r\nHost: x\r\n: v\r\n\r\n", 400, "malformed_request"),
        Refused(
            "a folded header line", "GET /echo HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n", 400, "malformed_request"),
        Refused("no Host in HTTP/1.1", "GET /echo HTTP/1.1\r\n\r\n", 400, "malformed_request"),
        Refused("two Host headers", "GET /echo HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400, "malformed_request"),
        Refused(
            "NUL in the target", Array("GET /echo".utf8) + [0] + Array("x HTTP/1.1\r\nHost: x\r\n\r\n".utf8), 400,
            "malformed_request"),
        Refused("a fragment in the target", "GET /echo#top HTTP/1.1\r\nHost: x\r\n\r\n", 400, "malformed_request"),
        Refused(
            "user information in the target", "GET http://user@host/echo HTTP/1.1\r\nHost: x\r\n\r\n", 400,
            "malformed_request"),
        Refused("HTTP/2.0", "GET /echo HTTP/2.0\r\nHost: x\r\n\r\n", 505, "http_version_not_supported"),
        Refused("HTTP/0.9", "GET /echo HTTP/0.9\r\nHost: x\r\n\r\n", 505, "http_version_not_supported"),
        Refused("an unknown Expect", "GET /echo HTTP/1.1\r\nHost: x\r\nExpect: tea\r\n\r\n", 417, "expectation_failed"),
        Refused(
            "a request line over the limit",
            "GET /echo?\(String(repeating: "a", count: 9_000)) HTTP/1.1\r\nHost: x\r\n\r\n", 414,
            "uri_too_long"),
        Refused(
            "too many query parameters",
            "GET /echo?\(Array(repeating: "a=1", count: 129).joined(separator: "&")) HTTP/1.1\r\nHost: x\r\n\r\n", 414,
            "uri_too_long"),
        Refused(
            "header fields over the limit",
            "GET /echo HTTP/1.1\r\nHost: x\r\nX-A: \(String(repeating: "a", count: 20_000))\r\n\r\n",
            431, "header_fields_too_large"),
        Refused(
            "too many header fields",
            "GET /echo HTTP/1.1\r\nHost: x\r\n\((0..<64).map { "X-\($0): 1\r\n" }.joined())\r\n", 431,
            "header_fields_too_large"),
    ]

    @Test("a faulty request is refused once, in JSON-ready form, and nothing after it is answered", arguments: refused)
    func refusedOnce(_ request: Refused) throws {
        try withServer { server, _ in
            let connection = try TestHTTPConnection(host: "127.0.0.1", port: server.port)
            try connection.send(request.bytes + Array(Self.smuggled.utf8))
            let response = try connection.readResponse()
            #expect(response.status == request.status)
            #expect(response.text == request.code)
            #expect(response.header("Connection")?.lowercased() == "close")
            let rest = connection.drain(within: .seconds(10))
            #expect(rest.closed)
            #expect(rest.bytes.isEmpty, "answered more: \(String(decoding: rest.bytes, as: UTF8.self).prefix(200))")
        }
    }

    @Test("every byte is judged as RFC 9110 has it in a header field's name and in its value")
    func everyByteOfAField() throws {
        // §5.6.2 tchar for a name (a ':' in it ends the name, and the rest is a valid value);
        // §5.5 field-vchar, SP, HTAB and obs-text for a value. The guard reads both from a
        // table: this compares every entry with the RFC's words.
        let tchar = Set(Array("!#$%&'*+-.^_`|~0123456789".utf8)).union(
            UInt8(ascii: "a")...UInt8(ascii: "z")
        ).union(UInt8(ascii: "A")...UInt8(ascii: "Z"))
        try withServer { server, _ in
            for byte in UInt8.min...UInt8.max {
                let inValue = byte == 0x09 || (0x20...0x7E).contains(byte) || byte >= 0x80
                let inName = tchar.contains(byte) || byte == UInt8(ascii: ":")
                for (position, allowed) in [("value", inValue), ("name", inName)] {
                    let field =
                        position == "value"
                        ? Array("X-A: a".utf8) + [byte, UInt8(ascii: "b")]
                        : [UInt8(ascii: "X"), byte] + Array("A: v".utf8)
                    let connection = try TestHTTPConnection(host: "127.0.0.1", port: server.port)
                    try connection.send(
                        Array("GET /echo HTTP/1.1\r\nHost: x\r\n".utf8) + field + Array("\r\n\r\n".utf8))
                    let response = try connection.readResponse()
                    #expect(response.status == (allowed ? 200 : 400), "byte \(byte) in a header field's \(position)")
                }
            }
        }
    }

    @Test("the same faults sent a byte at a time are refused the same way")
    func refusedByteByByte() throws {
        try withServer { server, _ in
            for request in Self.refused where request.bytes.count < 400 {
                let connection = try TestHTTPConnection(host: "127.0.0.1", port: server.port)
                for byte in request.bytes {
                    do {
                        try connection.send([byte])
                    } catch {
                        break  // refused before the end: the server may have closed already
                    }
                }
                let response = try connection.readResponse()
                #expect(response.status == request.status, "\(request.name)")
                #expect(response.text == request.code, "\(request.name)")
            }
        }
    }

    @Test("pipelined requests are answered in order; a fault after them is refused after their answers")
    func pipelined() throws {
        try withServer { server, _ in
            let connection = try TestHTTPConnection(host: "127.0.0.1", port: server.port)
            try connection.send(
                "GET /echo?1 HTTP/1.1\r\nHost: x\r\n\r\nPOST /echo?2 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
                    + "POST /echo?3 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nd\r\n0\r\nX-T: 1\r\n\r\n"
                    + "GET /echo?4 HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n" + Self.smuggled)
            #expect(try connection.readResponse().header("X-Target") == "/echo?1")
            let second = try connection.readResponse()
            #expect(second.header("X-Target") == "/echo?2")
            #expect(second.text == "abc")
            let third = try connection.readResponse()
            #expect(third.header("X-Target") == "/echo?3")
            #expect(third.text == "d")
            let fourth = try connection.readResponse()
            #expect(fourth.status == 400)
            #expect(fourth.header("Connection")?.lowercased() == "close")
            let rest = connection.drain(within: .seconds(10))
            #expect(rest.closed && rest.bytes.isEmpty)
        }
    }

    @Test("answers owed before a refusal all arrive, though the client wrote more behind it")
    func answersBeforeRefusalArrive() throws {
        // The server closes with the bytes after the refusal unread. Closed at once, the
        // connection would be reset, and answers not yet sent (or not yet read) lost.
        try withServer { server, _ in
            for _ in 1...20 {
                let connection = try TestHTTPConnection(host: "127.0.0.1", port: server.port)
                var bytes: [UInt8] = []
                for index in 0..<40 { bytes += Array("GET /echo?\(index) HTTP/1.1\r\nHost: x\r\n\r\n".utf8) }
                bytes += Array("GET /echo HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n".utf8)
                bytes += [UInt8](repeating: 65, count: 32_768)
                try connection.send(bytes)
                for index in 0..<40 {
                    #expect(try connection.readResponse().header("X-Target") == "/echo?\(index)")
                }
                #expect(try connection.readResponse().status == 400)
                #expect(connection.isClosedByPeer(within: .seconds(10)))
                #expect(!connection.wasReset)
            }
        }
    }

    @Test(
        "well-formed pipelines of random bodies, written in random pieces, are each answered whole",
        arguments: [nil, ["X-Echo"]] as [[String]?])
    func randomPipelines(requestHeaders: [String]?) throws {
        // Where the server's reads end (its buffer's size, the pieces the client writes)
        // falls anywhere: inside a head, a chunk-size line, chunk data, between requests. With
        // a list of header fields read, libmicrohttpd's buffer is smaller than what the guard
        // may read ahead.
        try withServer({ $0.requestHeaders = requestHeaders }) { server, _ in
            var random = SplitMix64(seed: requestHeaders == nil ? 1 : 2)  // the same pipelines on every run
            for _ in 1...40 {
                let connection = try TestHTTPConnection(host: "127.0.0.1", port: server.port)
                var bytes: [UInt8] = []
                var bodies: [[UInt8]] = []
                for index in 0..<random.below(5) + 1 {
                    let length = random.below(4) == 0 ? random.below(20) : random.below(150_000)
                    let seed = random.next()
                    let body = (0..<length).map { UInt8(truncatingIfNeeded: UInt64($0) &* 131 &+ seed) }
                    bodies.append(body)
                    bytes += Self.framed(body, target: "/echo?\(index)", chunked: random.below(2) == 0, random: &random)
                }
                var offset = 0
                while offset < bytes.count {
                    let end = min(bytes.count, offset + 1 + random.below(random.below(2) == 0 ? 64 : 70_000))
                    try connection.send(Array(bytes[offset..<end]))
                    offset = end
                }
                for (index, body) in bodies.enumerated() {
                    let response = try connection.readResponse()
                    #expect(response.status == 200)
                    #expect(response.header("X-Target") == "/echo?\(index)")
                    #expect(response.body == body, "request \(index), \(body.count) bytes")
                }
            }
        }
    }

    /// `body` as a POST to `target`: with Content-Length, or chunked in random sizes, some
    /// chunk-size lines with an extension or a leading zero.
    static func framed(_ body: [UInt8], target: String, chunked: Bool, random: inout SplitMix64) -> [UInt8] {
        guard chunked else {
            return Array("POST \(target) HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
        }
        var bytes = Array("POST \(target) HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        var offset = 0
        while offset < body.count {
            let end = min(body.count, offset + 1 + random.below(random.below(2) == 0 ? 100 : 40_000))
            let size = String(end - offset, radix: 16)
            let line = [size, "0" + size, size + ";a=b"][random.below(3)]
            bytes += Array("\(line)\r\n".utf8) + body[offset..<end] + Array("\r\n".utf8)
            offset = end
        }
        return bytes + Array("0\r\n\r\n".utf8)
    }

    @Test("an absolute-form target is served as its path (RFC 9112 §3.2.2)")
    func absoluteForm() throws {
        try withServer { server, _ in
            let connection = try TestHTTPConnection(host: "127.0.0.1", port: server.port)
            for (target, path) in [
                ("http://example.test/echo?a=1", "/echo?a=1"), ("HTTPS://example.test:8443/echo", "/echo"),
                ("http://example.test", "/"), ("http://example.test?q=1", "/?q=1"),
            ] {
                try connection.send("GET \(target) HTTP/1.1\r\nHost: example.test\r\n\r\n")
                let response = try connection.readResponse()
                #expect(response.header("X-Target") == path, "\(target)")
            }
        }
    }

    @Test("requests at the limits are served: a full head, 64 fields, 128 parameters, HTTP/1.0 without Host")
    func atTheLimits() throws {
        try withServer({ $0.maxHeadBytes = 16 * 1024 }) { server, _ in
            let connection = try TestHTTPConnection(host: "127.0.0.1", port: server.port)
            let query = Array(repeating: "a=1", count: 128).joined(separator: "&")
            var head = "GET /echo?\(query) HTTP/1.1\r\nHost: x\r\n"
            for index in 0..<62 { head += "X-\(index): 1\r\n" }
            let filler = 16 * 1024 - head.utf8.count - "X-Fill: \r\n\r\n".utf8.count
            head += "X-Fill: \(String(repeating: "f", count: filler))\r\n\r\n"
            #expect(head.utf8.count == 16 * 1024)
            try connection.send(head)
            let full = try connection.readResponse()
            #expect(full.status == 200)
            let over = try TestHTTPConnection(host: "127.0.0.1", port: server.port)
            try over.send(head.replacingOccurrences(of: "X-Fill: ", with: "X-Fill: f"))
            #expect(try over.readResponse().status == 431)
            let old = try TestHTTPConnection(host: "127.0.0.1", port: server.port)
            try old.send("GET /echo HTTP/1.0\r\n\r\n")
            #expect(try old.readResponse().status == 200)
        }
    }

    @Test("a head that trickles in is answered 408 at the request timeout; a body that stalls is closed")
    func deadlines() throws {
        try withServer({ $0.requestTimeoutSeconds = 1 }) { server, _ in
            let clock = ContinuousClock()
            let trickled = try TestHTTPConnection(host: "127.0.0.1", port: server.port)
            let started = clock.now
            let head = Array("GET /echo HTTP/1.1\r\nHost: x\r\n\((0..<60).map { "X-\($0): 1\r\n" }.joined())\r\n".utf8)
            var sent = 0
            // One line every 200 ms: the whole head would take 12 s; it must be cut at ~1 s.
            while sent < head.count, !trickled.isClosedByPeer(within: .milliseconds(200)) {
                let end = head[sent...].firstIndex(of: 10).map { $0 + 1 } ?? head.count
                try? trickled.send(Array(head[sent..<end]))
                sent = end
            }
            let response = try trickled.readResponse()
            #expect(response.status == 408)
            #expect(response.text == "request_timeout")
            #expect(sent < head.count, "the whole head arrived before the deadline")
            #expect(clock.now - started < .seconds(8))

            let stalled = try TestHTTPConnection(host: "127.0.0.1", port: server.port)
            try stalled.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nabc")
            let rest = stalled.drain(within: .seconds(20))
            #expect(rest.closed)

            let silent = try TestHTTPConnection(host: "127.0.0.1", port: server.port)
            try silent.send("GET /ec")
            #expect(try silent.readResponse().status == 408)
        }
    }
}
