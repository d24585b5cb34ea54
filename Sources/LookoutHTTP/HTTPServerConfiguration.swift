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
    /// Most libmicrohttpd daemons per thread, among which the thread's connections are
    /// spread: resuming a held request makes libmicrohttpd 0.9.75 walk every suspended
    /// connection of its daemon, so more daemons make each walk shorter. A thread starts
    /// with 8 and starts another for each 32 connections it holds, up to this many (at
    /// most 256); each costs a descriptor, and is kept until the server stops.
    public var daemonsPerThread: Int = 256
    /// The request header fields the responder reads; nil for all. Only these (and the
    /// fields that frame a request) are kept in libmicrohttpd's per-connection memory,
    /// which stays resident while a connection lives: with a list it is 4 KiB a
    /// connection, and the fields read must fit in 2.5 KiB (else 431). The responder sees
    /// no other field.
    public var requestHeaders: [String]?
    /// Most open connections per address; more wait in the kernel's accept queue.
    /// It is split evenly among the threads.
    public var maxConnections: Int
    /// Most open connections from one client address; 0 means no limit.
    public var maxConnectionsPerClient: Int
    /// Seconds an idle connection (not a held long-poll) stays open.
    public var idleTimeoutSeconds: Int
    /// Largest request head (request line and header fields); larger ones are refused
    /// with 431 (414 for a request line alone). It sizes the per-connection memory.
    public var maxHeadBytes: Int
    /// Largest request body accepted; larger ones are refused with 413 before it is read.
    public var maxBodyBytes: Int
    /// Seconds a request's head may take to arrive from its first byte (then 408), and
    /// the grace after which its body must average at least 1 KiB/s (else the connection
    /// is closed).
    public var requestTimeoutSeconds: Int
    /// Microseconds a thread with nothing to do keeps polling for events before it sleeps,
    /// when its last wait was at most four times as long (a client sending request after
    /// request); 0 never polls, at most 1000. A sleeping thread's next request waits for
    /// it to be woken: 30-80 µs on a virtual machine, whose idle CPU is halted.
    public var spinMicroseconds: Int = 50
    /// Whether a thread keeps polling after a pass of its polling lost the CPU for over
    /// half a millisecond. By default it stops for 100 ms: that shows CPU-bound processes
    /// sharing the CPUs, and each of its yields can hand the CPU to one of them for a time
    /// slice (a durable single wake beside two took 2.8 ms instead of 0.6).
    public var keepsPollingWhenContended = false
    /// Answers made on threads that are not event loops (a writer thread's commits), which
    /// loops holding suspended requests stay awake for; nil: none.
    public var awaitedAnswers: AwaitedAnswers?

    public init(
        bindAddresses: [String] = ["127.0.0.1", "::1"],
        port: Int = 3001,
        threadCount: Int = 2,
        maxConnections: Int = 16_000,
        maxConnectionsPerClient: Int = 1_000,
        idleTimeoutSeconds: Int = 60,
        maxHeadBytes: Int = 16 * 1024,
        maxBodyBytes: Int = 1024 * 1024,
        requestTimeoutSeconds: Int = 20
    ) {
        self.bindAddresses = bindAddresses
        self.port = port
        self.threadCount = threadCount
        self.maxConnections = maxConnections
        self.maxConnectionsPerClient = maxConnectionsPerClient
        self.idleTimeoutSeconds = idleTimeoutSeconds
        self.maxHeadBytes = maxHeadBytes
        self.maxBodyBytes = maxBodyBytes
        self.requestTimeoutSeconds = requestTimeoutSeconds
    }
}
