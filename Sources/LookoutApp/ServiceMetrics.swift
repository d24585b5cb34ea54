import Prometheus
import Synchronization

/// The service's metrics, in a Prometheus registry of its own, rendered for `GET /metrics`.
///
/// Each ``Application`` owns one: nothing is bootstrapped process-wide, because
/// swift-metrics' `MetricsSystem.bootstrap` may be called once per process (a second call
/// traps) and the tests start many applications in one process.
///
/// - Request counters and duration histograms are kept per route in ``RouteMetrics``, so
///   the request path never formats labels or searches the registry.
/// - Values that exist elsewhere (held requests, the store's revision, wakes) are read
///   when scraped, by the hooks given to ``beforeEachScrape(_:)``.
public final class ServiceMetrics: Sendable {
    /// The Prometheus text exposition format.
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// Request duration buckets in seconds, 100 µs to 10 s; a long-poll held longer
    /// counts in `+Inf`.
    static let durationBuckets: [Double] = [
        0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
    ]

    // Computed: swift-prometheus 2.4.1 does not declare MetricNameDescriptor Sendable.
    static var requests: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "lookout", metricName: "http_requests", unitName: "total",
            helpText: "HTTP requests answered, by method, route pattern and status.")
    }
    static var requestDuration: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "lookout", metricName: "http_request_duration", unitName: "seconds",
            helpText: "Time from receiving a request to answering it (a held long-poll until it is answered).")
    }

    /// Where every metric of this application is registered.
    let registry = PrometheusCollectorRegistry()

    /// Requests suspended right now: long-polls, and requests whose work runs in a task
    /// (logins, verifications, writes, readiness checks).
    let heldSessions: Gauge
    /// The store's current revision.
    let storeRevision: Gauge
    /// Long-polls woken by a write.
    let wakes: Counter
    private let storageErrors: Counter
    /// Commits of writes to storage, by the thread that made them.
    private let loopCommits: Counter
    private let writerCommits: Counter
    private let queueCheckpoints: Counter
    private let commitCheckpoints: Counter
    /// What the counters above were last brought up to (``export(_:to:)``).
    private let exported = Mutex<[ObjectIdentifier: UInt64]>([:])
    private let hooks = Mutex<[@Sendable (ServiceMetrics) -> Void]>([])

    init() {
        heldSessions = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "lookout", metricName: "held_sessions", unitName: "",
                helpText: "Requests held right now: long-polls, and logins, writes or readiness checks in progress."))
        storeRevision = registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "lookout", metricName: "store_revision", unitName: "",
                helpText: "The store's current revision."))
        wakes = registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "lookout", metricName: "wakes", unitName: "total",
                helpText: "Long-polls woken by a write."))
        storageErrors = registry.makeCounter(
            descriptor: MetricNameDescriptor(
                namespace: "lookout", metricName: "storage_errors", unitName: "total",
                helpText: "Writes to storage that failed."))
        (loopCommits, writerCommits) = Self.counters(
            "commits", in: registry, label: "thread", "loop", "writer",
            help:
                "Commits to SQLite or PostgreSQL: on the event loop that read the write (thread=loop), or by the writer thread as a group (thread=writer)."
        )
        (queueCheckpoints, commitCheckpoints) = Self.counters(
            "checkpoints", in: registry, label: "by", "queue", "commit",
            help:
                "SQLite log checkpoints: run beside the commits on a connection of their own (by=queue), or tried by a commit because the log passed 10,000 pages (by=commit)."
        )
    }

    /// The two counters of `lookout_<name>_total`, told apart by `label`'s two values.
    private static func counters(
        _ name: String, in registry: PrometheusCollectorRegistry, label: String, _ first: String, _ second: String,
        help: String
    ) -> (Counter, Counter) {
        let descriptor = MetricNameDescriptor(namespace: "lookout", metricName: name, unitName: "total", helpText: help)
        return (
            registry.makeCounter(descriptor: descriptor, labels: [(label, first)]),
            registry.makeCounter(descriptor: descriptor, labels: [(label, second)])
        )
    }

    /// For code written against swift-metrics (`Counter(label:dimensions:factory:)` and the
    /// like): what it makes is exported with the rest.
    ///
    /// - Warning: a name must not be one of this type's own: swift-prometheus traps when a
    ///   name is registered again with another type, other help text (swift-metrics gives
    ///   none) or other buckets.
    public var factory: PrometheusMetricsFactory {
        PrometheusMetricsFactory(registry: registry)
    }

    /// Counts a failed write to storage (`lookout_storage_errors_total`).
    ///
    /// Nothing calls it yet: the store is in memory; the persistence layer will.
    public func recordStorageError() {
        storageErrors.increment()
    }

    /// The instruments of one route pattern, or of `"unmatched"`.
    func route(_ pattern: String) -> RouteMetrics {
        RouteMetrics(pattern: pattern, registry: registry)
    }

    /// Runs `hook` before each scrape, to set values read from elsewhere. It is given
    /// this object, so that it need not capture it (a reference cycle).
    func beforeEachScrape(_ hook: @escaping @Sendable (ServiceMetrics) -> Void) {
        hooks.withLock { $0.append(hook) }
    }

    /// Brings `lookout_wakes_total` up to `total`, the wakes counted so far elsewhere.
    func exportWakes(total: UInt64) {
        export(total, to: wakes)
    }

    /// Brings `lookout_commits_total` up to the commits counted so far by the writes'
    /// executor, on loops and by the writer thread.
    func exportCommits(onLoops: UInt64, byWriter: UInt64) {
        export(onLoops, to: loopCommits)
        export(byWriter, to: writerCommits)
    }

    /// Brings `lookout_checkpoints_total` up to the checkpoints counted so far by SQLite's
    /// storage, beside the commits and by them.
    func exportCheckpoints(inQueue: UInt64, byCommits: UInt64) {
        export(inQueue, to: queueCheckpoints)
        export(byCommits, to: commitCheckpoints)
    }

    /// Brings `counter` up to `total`, a count kept elsewhere.
    private func export(_ total: UInt64, to counter: Counter) {
        exported.withLock { exported in
            let before = exported[ObjectIdentifier(counter), default: 0]
            guard total > before else { return }
            counter.increment(by: Int64(total - before))
            exported[ObjectIdentifier(counter)] = total
        }
    }

    /// Every metric in the Prometheus text format, after running the scrape hooks.
    public func exposition() -> [UInt8] {
        for hook in hooks.withLock({ $0 }) {
            hook(self)
        }
        var text: [UInt8] = []
        registry.emit(into: &text)
        return text
    }
}
