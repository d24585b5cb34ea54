import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP relay on 127.0.0.1 that passes bytes both ways to another local port, and can
/// be cut: to take one client off a server (one Lookout instance off the shared
/// database) while every other client keeps its connections.
///
/// ``cut()`` shuts every relayed connection down and closes new ones as soon as they
/// are accepted, as a broken network path would look to the client; ``restore()`` lets
/// new connections through again. Each connection is pumped by a thread of its own.
public final class TCPRelay: Sendable {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    private struct State {
        var isCut = false
        var isStopped = false
        /// Both ends of every relayed connection.
        var sockets: Set<Int32> = []
    }

    /// The port to connect to instead of the target's.
    public let port: Int
    private let targetPort: Int
    private let listener: Int32
    private let state = Mutex(State())
    private let acceptorDone = DispatchSemaphore(value: 0)

    /// Listens on a free port of 127.0.0.1 and relays to `targetPort` on 127.0.0.1.
    public init(to targetPort: Int) throws(Failure) {
        self.targetPort = targetPort
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, Glibc.listen(listener, 64) == 0 else {
            let reason = String(cString: strerror(errno))
            close(listener)
            throw Failure(description: "cannot listen on 127.0.0.1: \(reason)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        self.listener = listener
        let thread = Thread { [self] in
            acceptLoop()
            acceptorDone.signal()
        }
        thread.name = "tcp-relay-accept"
        thread.start()
    }

    deinit {
        stop()
    }

    /// Breaks every relayed connection and refuses new ones until ``restore()``.
    public func cut() {
        state.withLock { state in
            state.isCut = true
            for socket in state.sockets { shutdown(socket, Int32(SHUT_RDWR)) }
        }
    }

    /// Relays new connections again.
    public func restore() {
        state.withLock { $0.isCut = false }
    }

    /// Stops listening and breaks every relayed connection.
    public func stop() {
        let wasStopped = state.withLock { state in
            defer { state.isStopped = true }
            for socket in state.sockets { shutdown(socket, Int32(SHUT_RDWR)) }
            return state.isStopped
        }
        guard !wasStopped else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        acceptorDone.wait()
        close(listener)
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            let refused = state.withLock { $0.isCut || $0.isStopped }
            guard !refused, let server = connectToTarget() else {
                close(client)
                if state.withLock({ $0.isStopped }) { return }
                continue
            }
            let tracked = state.withLock { state in
                guard !state.isCut, !state.isStopped else { return false }
                state.sockets.formUnion([client, server])
                return true
            }
            guard tracked else {
                close(client)
                close(server)
                continue
            }
            let thread = Thread { [self] in pump(client, server) }
            thread.name = "tcp-relay-pump"
            thread.start()
        }
    }

    private func connectToTarget() -> Int32? {
        let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard server >= 0 else { return nil }
        var address = Self.loopback(port: targetPort)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(server)
            return nil
        }
        return server
    }

    /// Copies bytes both ways until either end closes or fails, then closes both.
    private func pump(_ first: Int32, _ second: Int32) {
        var descriptors = [
            pollfd(fd: first, events: Int16(POLLIN), revents: 0), pollfd(fd: second, events: Int16(POLLIN), revents: 0),
        ]
        var buffer = [UInt8](repeating: 0, count: 65536)
        relaying: while true {
            guard poll(&descriptors, 2, -1) >= 0 || errno == EINTR else { break }
            for index in 0..<2 where descriptors[index].revents != 0 {
                let from = descriptors[index].fd
                let to = descriptors[1 - index].fd
                let count = read(from, &buffer, buffer.count)
                guard count > 0, Self.writeAll(buffer[..<count], to: to) else { break relaying }
            }
        }
        state.withLock { state in
            state.sockets.subtract([first, second])
            close(first)
            close(second)
        }
    }

    private static func writeAll(_ bytes: ArraySlice<UInt8>, to socket: Int32) -> Bool {
        var remaining = bytes
        while !remaining.isEmpty {
            let written = remaining.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { return false }
            remaining = remaining.dropFirst(written)
        }
        return true
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
