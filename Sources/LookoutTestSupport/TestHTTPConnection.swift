import Glibc

/// Failures of `TestHTTPConnection`.
public enum TestHTTPError: Error, CustomStringConvertible {
    /// The address was invalid or `connect` failed; carries the `errno` value.
    case connectFailed(Int32)
    /// A send, receive or connect did not finish within the connection's timeout.
    case timedOut
    /// The connection was closed (by either side) or reset.
    case closed
    /// The server sent something that is not valid HTTP/1.x, or exceeded a size limit.
    case malformed(String)

    /// A human-readable explanation for test failure messages.
    public var description: String {
        switch self {
        case .connectFailed(let code): "connect failed: \(String(cString: strerror(code))) (errno \(code))"
        case .timedOut: "timed out"
        case .closed: "connection closed"
        case .malformed(let why): "malformed response: \(why)"
        }
    }
}

/// A blocking HTTP/1.1 client connection over a POSIX socket, for end-to-end tests.
///
/// Not `Sendable`: it owns a socket and a read buffer, so use it from one task only.
/// Responses are read strictly (CRLF only, size limits), and bytes past one response stay
/// buffered for the next, which makes pipelining and raw, hand-built requests easy to test.
public final class TestHTTPConnection {
    /// The largest accepted header section (status line, fields, blank line), and trailer section.
    public static let maxHeaderBytes = 64 * 1024
    /// The largest accepted response body.
    public static let maxBodyBytes = 64 * 1024 * 1024
    // A chunk-size line is a number plus optional extensions; anything longer is garbage.
    private static let maxChunkLineBytes = 4096

    /// The numeric address this connection was opened to.
    public let host: String
    /// The port this connection was opened to.
    public let port: Int

    private var fd: Int32 = -1
    private var buffer: [UInt8] = []
    private var start = 0
    private var peerClosed = false
    /// Whether the peer ended the connection with a reset (RST) rather than an end of
    /// stream (FIN), as far as reading has seen.
    public private(set) var wasReset = false

    /// Connects to a numeric IPv4 or IPv6 address such as `127.0.0.1` or `::1`.
    ///
    /// `source`, a numeric address of this machine such as `127.0.0.2` (any of 127/8 is
    /// loopback's), is the address the connection comes from; nil lets the system choose.
    /// `timeout` bounds the connect and every single send or receive call.
    public init(host: String, port: Int, from source: String? = nil, timeout: Duration = .seconds(60)) throws {
        self.host = host
        self.port = port
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        // Only numeric hosts: tests must never depend on DNS or /etc/hosts.
        guard (0...65535).contains(port), getaddrinfo(host, String(port), &hints, &list) == 0 else {
            throw TestHTTPError.connectFailed(EINVAL)
        }
        defer { freeaddrinfo(list) }
        var lastError = EAFNOSUPPORT
        var candidate = list
        while let info = candidate, fd < 0 {
            candidate = info.pointee.ai_next
            let family = info.pointee.ai_family
            guard family == AF_INET || family == AF_INET6 else { continue }
            let socketFD = socket(family, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
            guard socketFD >= 0 else { lastError = errno; continue }
            do {
                if let source { try TestHTTP.bind(socketFD, to: source, family: family) }
                try TestHTTP.connect(socketFD, info.pointee.ai_addr, info.pointee.ai_addrlen, timeout: timeout)
                fd = socketFD
            } catch TestHTTPError.connectFailed(let code) {
                lastError = code
                _ = Glibc.close(socketFD)
            } catch {
                _ = Glibc.close(socketFD)
                throw error
            }
        }
        guard fd >= 0 else { throw TestHTTPError.connectFailed(lastError) }
        var tv = TestHTTP.socketTimeval(for: timeout)
        var one: Int32 = 1
        let tvSize = socklen_t(MemoryLayout<timeval>.size), intSize = socklen_t(MemoryLayout<Int32>.size)
        guard setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, tvSize) == 0,
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, tvSize) == 0,
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, intSize) == 0
        else {
            let code = errno
            close()
            throw TestHTTPError.connectFailed(code)
        }
    }

    deinit { close() }

    /// Writes raw bytes as-is: use it for malformed, pipelined, chunked or deliberately slow requests.
    public func send(_ bytes: [UInt8]) throws {
        guard fd >= 0 else { throw TestHTTPError.closed }
        try bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                // MSG_NOSIGNAL: a server closing early must fail the test, not kill it with SIGPIPE.
                let sent = Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                if sent > 0 { offset += sent; continue }
                if sent < 0 && errno == EINTR { continue }
                if sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { throw TestHTTPError.timedOut }
                throw TestHTTPError.closed
            }
        }
    }

    /// Writes the UTF-8 bytes of `text` as-is; write `\r\n` yourself.
    public func send(_ text: String) throws {
        try send(Array(text.utf8))
    }

    /// Sends one request and reads its final response, keeping the connection open.
    ///
    /// Adds `Host: host:port` unless `headers` has a Host field, and `Content-Length` when `body`
    /// is non-nil unless `headers` has Content-Length or Transfer-Encoding (then `body` goes raw).
    /// Interim 1xx responses other than 101 are skipped; use `readResponse` to see them.
    public func request(
        _ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8]? = nil
    ) throws -> TestHTTPResponse {
        let names = Set(headers.map { $0.0.lowercased() })
        var head = "\(method) \(target) HTTP/1.1\r\n"
        if !names.contains("host") {
            head += host.contains(":") ? "Host: [\(host)]:\(port)\r\n" : "Host: \(host):\(port)\r\n"
        }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body, !names.contains("content-length"), !names.contains("transfer-encoding") {
            head += "Content-Length: \(body.count)\r\n"
        }
        head += "\r\n"
        try send(Array(head.utf8) + (body ?? []))
        var response = try readResponse(forMethod: method)
        while (100..<200).contains(response.status) && response.status != 101 {
            response = try readResponse(forMethod: method)
        }
        return response
    }

    /// Reads one response; `method` is that of the request it answers (HEAD responses have no body).
    ///
    /// Throws `closed` if the peer closed before sending a byte of it, `malformed` for anything
    /// that is not strict HTTP/1.x, or ends early, or exceeds `maxHeaderBytes`/`maxBodyBytes`.
    public func readResponse(forMethod method: String = "GET") throws -> TestHTTPResponse {
        if buffer.count == start, try !fill() { throw TestHTTPError.closed }
        var budget = Self.maxHeaderBytes
        let statusLine = try readLine(budget: &budget, what: "header section")
        let (version, status, reason) = try TestHTTPResponse.parseStatusLine(statusLine)
        var headers: [TestHTTPHeader] = []
        while case let line = try readLine(budget: &budget, what: "header section"), !line.isEmpty {
            headers.append(try TestHTTPResponse.parseHeaderLine(line))
        }
        let body: [UInt8]
        switch try TestHTTPResponse.framing(
            status: status, method: method, headers: headers,
            maxBody: Self.maxBodyBytes)
        {
        case .none: body = []
        case .length(let length): body = try readExactly(length)
        case .chunked: body = try readChunkedBody()
        case .untilClose: body = try readUntilClose()
        }
        return TestHTTPResponse(version: version, status: status, reason: reason, headers: headers, body: body)
    }

    /// Waits up to `within` for the server to close (FIN or RST) and reports whether it did.
    ///
    /// Data arriving meanwhile does not count as closing; it is kept for `readResponse`.
    /// Also true once this side has called `close` or `abort`.
    public func isClosedByPeer(within timeout: Duration) -> Bool {
        if peerClosed || fd < 0 { return true }
        let deadline = ContinuousClock.now + timeout
        while true {
            let remaining = max(deadline - .now, .zero)
            guard TestHTTP.poll(fd, events: Int16(POLLIN), timeout: remaining) != 0 else { return false }
            do {
                if try !fill() { return true }
            } catch TestHTTPError.closed {
                return true
            } catch {
                return false
            }
            // A server streaming without end must not keep us past the deadline.
            if ContinuousClock.now >= deadline { return false }
        }
    }

    /// Everything still to come from the peer: the bytes it sends from now until it closes
    /// (unread bytes already received included), or until `timeout` passes.
    /// - Returns: the bytes, and whether the peer closed.
    public func drain(within timeout: Duration) -> (bytes: [UInt8], closed: Bool) {
        let closed = isClosedByPeer(within: timeout)
        defer { start = buffer.count }
        return (Array(buffer[start...]), closed)
    }

    /// Closes the socket gracefully (FIN). Safe to call more than once; also done on deinit.
    public func close() {
        guard fd >= 0 else { return }
        _ = Glibc.close(fd)
        fd = -1
    }

    /// Drops the connection abruptly with a TCP RST, as a client crashing mid-request would.
    public func abort() {
        guard fd >= 0 else { return }
        var option = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        close()
    }

    /// Receives more bytes into the buffer; false at end of stream.
    private func fill() throws -> Bool {
        guard fd >= 0 else { throw TestHTTPError.closed }
        if peerClosed { return false }
        // Compact only when the consumed prefix dominates, keeping appends amortised O(1).
        if start > 0 && start >= buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let received = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if received > 0 {
                buffer.append(contentsOf: chunk[..<received])
                return true
            }
            if received == 0 { peerClosed = true; return false }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: throw TestHTTPError.timedOut
            case ECONNRESET:
                peerClosed = true
                wasReset = true
                throw TestHTTPError.closed
            default: throw TestHTTPError.closed
            }
        }
    }

    /// Consumes one CRLF-terminated line (returned without CRLF), charging it to `budget`.
    private func readLine(budget: inout Int, what: String) throws -> [UInt8] {
        var scanned = 0  // relative to `start`, because `fill` may compact the buffer
        while true {
            if let lf = buffer[(start + scanned)...].firstIndex(of: 10) {
                let length = lf - start + 1
                guard length <= budget else { throw TestHTTPError.malformed("\(what) exceeds its size limit") }
                guard lf > start, buffer[lf - 1] == 13 else { throw TestHTTPError.malformed("bare LF in \(what)") }
                let line = Array(buffer[start..<(lf - 1)])
                guard !line.contains(13) else { throw TestHTTPError.malformed("bare CR in \(what)") }
                budget -= length
                start = lf + 1
                return line
            }
            guard buffer.count - start < budget else {
                throw TestHTTPError.malformed("\(what) exceeds its size limit")
            }
            scanned = buffer.count - start
            guard try fill() else { throw TestHTTPError.malformed("connection closed inside \(what)") }
        }
    }

    /// Consumes exactly `count` bytes.
    private func readExactly(_ count: Int) throws -> [UInt8] {
        while buffer.count - start < count {
            guard try fill() else {
                throw TestHTTPError.malformed("connection closed after \(buffer.count - start) of \(count) bytes")
            }
        }
        defer { start += count }
        return Array(buffer[start..<(start + count)])
    }

    private func readChunkedBody() throws -> [UInt8] {
        var body: [UInt8] = []
        while let chunk = try readChunk() {
            guard chunk.count <= Self.maxBodyBytes - body.count else {
                throw TestHTTPError.malformed("chunked body exceeds \(Self.maxBodyBytes) bytes")
            }
            body += chunk
        }
        return body
    }

    /// Reads a response's status line and header fields, leaving its body unread: for a
    /// body that streams (server-sent events), read with ``readChunk()``.
    public func readHead() throws -> TestHTTPResponse {
        if buffer.count == start, try !fill() { throw TestHTTPError.closed }
        var budget = Self.maxHeaderBytes
        let (version, status, reason) = try TestHTTPResponse.parseStatusLine(
            try readLine(budget: &budget, what: "header section"))
        var headers: [TestHTTPHeader] = []
        while case let line = try readLine(budget: &budget, what: "header section"), !line.isEmpty {
            headers.append(try TestHTTPResponse.parseHeaderLine(line))
        }
        return TestHTTPResponse(version: version, status: status, reason: reason, headers: headers, body: [])
    }

    /// Reads the next chunk of a chunked body as it arrives; nil after the last one (its
    /// trailer section read too).
    public func readChunk() throws -> [UInt8]? {
        var lineBudget = Self.maxChunkLineBytes
        let size = try TestHTTPResponse.parseChunkSize(try readLine(budget: &lineBudget, what: "chunk size line"))
        guard size <= Self.maxBodyBytes else {
            throw TestHTTPError.malformed("chunk of \(size) bytes exceeds \(Self.maxBodyBytes)")
        }
        guard size > 0 else {
            // Trailer fields are validated like headers but dropped: no test needs them yet.
            var budget = Self.maxHeaderBytes
            while case let line = try readLine(budget: &budget, what: "trailer section"), !line.isEmpty {
                _ = try TestHTTPResponse.parseHeaderLine(line)
            }
            return nil
        }
        let chunk = try readExactly(size)
        guard try readExactly(2) == [13, 10] else {
            throw TestHTTPError.malformed("chunk data not followed by CRLF")
        }
        return chunk
    }

    private func readUntilClose() throws -> [UInt8] {
        while try fill() {
            guard buffer.count - start <= Self.maxBodyBytes else {
                throw TestHTTPError.malformed("body exceeds \(Self.maxBodyBytes) bytes")
            }
        }
        defer { start = buffer.count }
        return Array(buffer[start...])
    }
}
