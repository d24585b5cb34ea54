/// How the HTTP server listens and what it accepts from clients.
public struct HTTPServerConfiguration: Sendable {
    /// Numeric addresses to listen on, all with the same port. `::` listens on every
    /// IPv6 and IPv4 address; the default is loopback on both stacks, because clients
    /// may resolve `localhost` to `::1` first.
    public var bindAddresses: [String]
    /// TCP port; 0 picks a free one (see ``HTTPServer/port``).
    public var port: Int
    /// Worker threads per address, each with its own epoll loop.
    public var threadCount: Int
    /// Most open connections per address; more wait in the kernel's accept queue.
    /// It is split evenly among the threads.
    public var maxConnections: Int
    /// Most open connections from one client address; 0 means no limit.
    public var maxConnectionsPerClient: Int
    /// Seconds an idle connection (not a held long-poll) stays open.
    public var idleTimeoutSeconds: Int
    /// Bytes of per-connection memory; it bounds the request line and headers.
    public var connectionMemoryBytes: Int
    /// Largest request body accepted; larger ones reach the responder flagged `bodyTooLarge`.
    public var maxBodyBytes: Int

    public init(
        bindAddresses: [String] = ["127.0.0.1", "::1"],
        port: Int = 3001,
        threadCount: Int = 2,
        maxConnections: Int = 16_000,
        maxConnectionsPerClient: Int = 1_000,
        idleTimeoutSeconds: Int = 60,
        connectionMemoryBytes: Int = 16 * 1024,
        maxBodyBytes: Int = 1024 * 1024
    ) {
        self.bindAddresses = bindAddresses
        self.port = port
        self.threadCount = threadCount
        self.maxConnections = maxConnections
        self.maxConnectionsPerClient = maxConnectionsPerClient
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.connectionMemoryBytes = connectionMemoryBytes
        self.maxBodyBytes = maxBodyBytes
    }
}
