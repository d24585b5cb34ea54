import Glibc

/// One-shot HTTP requests for end-to-end tests.
///
/// Each call opens a fresh `TestHTTPConnection`, sends the request with `Connection: close`,
/// reads the response and closes. Use `TestHTTPConnection` directly for keep-alive,
/// pipelining, raw bytes or watching how the server closes.
///
/// ```swift
/// let response = try TestHTTP.request(port: port, "GET", "/health")
/// #expect(response.status == 200)
/// ```
public enum TestHTTP {
    /// Sends one request on a new connection and returns the final response.
    ///
    /// `host` must be a numeric address (`127.0.0.1`, `::1`). `Connection: close` is added
    /// unless `headers` already has a Connection field; `Host` and `Content-Length` are added
    /// as `TestHTTPConnection.request` does. `timeout` bounds connect and each socket call.
    public static func request(
        host: String = "127.0.0.1",
        port: Int,
        _ method: String,
        _ target: String,
        headers: [(String, String)] = [],
        body: [UInt8]? = nil,
        timeout: Duration = .seconds(60)
    ) throws -> TestHTTPResponse {
        let connection = try TestHTTPConnection(host: host, port: port, timeout: timeout)
        defer { connection.close() }
        var allHeaders = headers
        if !headers.contains(where: { $0.0.lowercased() == "connection" }) {
            allHeaders.append(("Connection", "close"))
        }
        return try connection.request(method, target, headers: allHeaders, body: body)
    }

    // Socket-level helpers shared with TestHTTPConnection; internal, not part of the test API.

    /// `timeout` as a `timeval` for SO_RCVTIMEO/SO_SNDTIMEO.
    static func socketTimeval(for timeout: Duration) -> timeval {
        let (seconds, attoseconds) = timeout.components
        guard timeout > .zero else {
            // A zero timeval means "block forever", the opposite of what a tiny timeout asks for.
            return timeval(tv_sec: 0, tv_usec: 1)
        }
        let micros = Int(attoseconds / 1_000_000_000_000)
        return timeval(tv_sec: Int(seconds), tv_usec: seconds == 0 && micros == 0 ? 1 : micros)
    }

    /// `timeout` in whole milliseconds for `poll`, rounded up and clamped to `0...Int32.max`.
    static func milliseconds(_ timeout: Duration) -> Int32 {
        guard timeout > .zero else { return 0 }
        let (seconds, attoseconds) = timeout.components
        guard seconds < Int64(Int32.max / 1000) else { return Int32.max }
        let millis = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(millis)
    }

    /// Polls one descriptor; returns its `revents`, or 0 when `timeout` passes first.
    static func poll(_ fd: Int32, events: Int16, timeout: Duration) -> Int16 {
        let deadline = ContinuousClock.now + timeout
        while true {
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let ready = Glibc.poll(&entry, 1, milliseconds(deadline - .now))
            if ready > 0 { return entry.revents }
            if ready == 0 { return 0 }
            // Retry after a signal with whatever time is left; report other failures as an error event.
            if errno != EINTR { return Int16(POLLERR) }
        }
    }

    /// Binds `socketFD` to the numeric address `source` of `family`, any port.
    static func bind(_ socketFD: Int32, to source: String, family: Int32) throws {
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE
        hints.ai_family = family
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(source, "0", &hints, &list) == 0, let info = list else {
            throw TestHTTPError.connectFailed(EINVAL)
        }
        defer { freeaddrinfo(list) }
        guard Glibc.bind(socketFD, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
            throw TestHTTPError.connectFailed(errno)
        }
    }

    /// Connects `socketFD` to `address`, failing with `timedOut` after `timeout`.
    // Non-blocking so the timeout also covers the handshake; blocking mode is restored afterwards.
    static func connect(
        _ socketFD: Int32, _ address: UnsafeMutablePointer<sockaddr>?, _ length: socklen_t, timeout: Duration
    ) throws {
        let flags = fcntl(socketFD, F_GETFL)
        _ = fcntl(socketFD, F_SETFL, flags | O_NONBLOCK)
        if Glibc.connect(socketFD, address, length) != 0 {
            guard errno == EINPROGRESS || errno == EINTR else { throw TestHTTPError.connectFailed(errno) }
            guard TestHTTP.poll(socketFD, events: Int16(POLLOUT), timeout: timeout) != 0 else {
                throw TestHTTPError.timedOut
            }
            var error: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            _ = getsockopt(socketFD, SOL_SOCKET, SO_ERROR, &error, &size)
            guard error == 0 else { throw TestHTTPError.connectFailed(error) }
        }
        _ = fcntl(socketFD, F_SETFL, flags)
    }
}
