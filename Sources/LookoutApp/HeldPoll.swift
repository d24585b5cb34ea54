import LookoutHTTP
import LookoutStore
import LookoutTrace
import Synchronization

/// One held long-poll: the view its client already has, its wait in the store, and its
/// deadline.
///
/// A wake renders the view again. When the new rendering differs from the client's, the
/// poll is answered 200 with it. When it is the same — a sort field changed without
/// moving anything into the page, a filtered field changed without changing the match —
/// the poll waits again on what the new rendering read, so the client is only woken for
/// a change it can see. At the deadline it is answered 304 with the latest `ETag`.
///
/// The polls one write wakes that see the same bytes (the same cached rendering, the same
/// changed keys, and no `X-Request-Id` of their own to echo) are answered with one shared
/// response, built once (``SuspendedRequest/respond(sharing:_:)``). So are the 304s of the
/// polls whose deadlines the timer runs in one wake (``DeadlineTimer/coalescing``).
final class HeldPoll: FieldRegistrar.Waiter {
    /// What a held poll is answered with.
    enum Answer: Sendable {
        case fresh(RenderedView, epoch: String, changed: [String])
        /// The unchanged cursor, with the latest rendering's caching headers.
        case notModified(EntityTag, caching: [(String, String)])

        func response(requestID: String?) -> HTTPResponse {
            switch self {
            case .notModified(let tag, let caching):
                return .notModified(tag, caching: caching, requestID: requestID)
            case .fresh(let view, let epoch, let changed):
                var response = HTTPResponse.rendering(
                    view, tag: EntityTag(epoch: epoch, revision: view.reads.revision), requestID: requestID)
                response.headers.add(LongPoll.changedHeader, changed.map(HeldPoll.headerName).joined(separator: ", "))
                return response
            }
        }
    }

    /// A changed key's name as `Lookout-Changed` lists it: field names are the clients'
    /// text, so a byte outside printable ASCII, and the list's own `,` and `%`, are
    /// percent-encoded.
    static func headerName(_ name: String) -> String {
        PercentEncoding.encode(name) { byte in
            byte > 0x20 && byte < 0x7F && byte != UInt8(ascii: ",") && byte != UInt8(ascii: "%")
        }
    }

    private struct State {
        /// The rendering the client would see: the one it holds, or an equal later one.
        var view: RenderedView
        var waiter: FieldRegistrar.WaiterID?
        /// Keys whose change woke it so far, in order, without repeats.
        var changed: [String] = []
        /// Its connection, once held.
        var held: SuspendedRequest?
    }

    private let store: Store
    private let deadlines: DeadlineTimer
    private let epoch: String
    /// The client's own `X-Request-Id`, which its answers echo.
    private let requestID: String?
    /// Renders the view, and logs and counts each answer (a shared one by its status).
    private let route: any ViewRoute
    /// The route's ``ViewRoute/identity`` when its rendering is shared: found at the hold,
    /// so that a wake renders it once per batch for the polls with the same (``WakeRenders``).
    private let identity: RenderIdentity?
    private let state: Mutex<State>
    private let deadline = Mutex<DeadlineTimer.Token?>(nil)

    init(
        store: Store,
        deadlines: DeadlineTimer,
        view: RenderedView,
        epoch: String,
        requestID: String?,
        route: any ViewRoute
    ) {
        self.store = store
        self.deadlines = deadlines
        self.epoch = epoch
        self.requestID = requestID
        self.route = route
        self.identity = view.sharedAs != nil ? route.identity : nil
        self.state = Mutex(State(view: view))
    }

    /// The 304 for the latest rendering, for the deadline and for shutdown.
    func notModified() -> HTTPResponse {
        Self.unchanged(state.withLock { $0.view }, epoch: epoch).response(requestID: requestID)
    }

    /// The 304 answer for `view`.
    private static func unchanged(_ view: RenderedView, epoch: String) -> Answer {
        .notModified(EntityTag(epoch: epoch, revision: view.reads.revision), caching: view.caching)
    }

    /// Answers 304 at the deadline; shared when nothing in the answer is this poll's own.
    private func answerUnchanged(_ held: SuspendedRequest) {
        let view = state.withLock { $0.view }
        let unchanged = Self.unchanged(view, epoch: epoch)
        guard requestID == nil, let name = view.sharedAs else {
            held.respond(answer(.success(unchanged)))
            return
        }
        // The cached rendering names the tag's revision and the caching headers.
        let key = ["304", name.grant.cacheKey, name.view, String(view.revision), epoch]
        if held.respond(sharing: key, { unchanged.response(requestID: nil) }) { route.counted(304) }
    }

    /// Holds the poll for `wait` seconds plus jitter.
    func hold(_ held: SuspendedRequest, for wait: Double) {
        // The deadline is scheduled before the wait is registered, so that a wake can
        // always cancel it; the action checks it still owns the poll.
        var spread = JitterGenerator()
        let jitter = Double.random(in: 0...(wait / 16), using: &spread)
        let token = deadlines.schedule(after: .seconds(wait + jitter)) { [self] in
            // Cancelled here means not woken: nothing it read has changed.
            if let waiter = state.withLock({ $0.waiter }), store.cancel(waiter) {
                answerUnchanged(held)
            }
        }
        deadline.withLock { $0 = token }
        let reads = state.withLock { state in
            state.held = held
            return state.view.reads
        }
        register(held, reads: reads)
    }

    /// A write changed what it waits on: rendered and answered by the loop holding the
    /// connection, so that a write waking polls on every loop has them all answer at once.
    func wake(_ wakeup: FieldRegistrar.Wakeup) {
        WakeTrace.mark(.woke, revision: wakeup.revision)
        // Registered only once held (``hold(_:for:)``).
        guard let held = state.withLock({ $0.held }) else { return }
        let changed = store.names(of: wakeup.changed)
        held.onItsLoop { [self] in
            // Answered meanwhile (at shutdown): nothing to render or wait for.
            guard !held.isAnswered else { return }
            if let next = rerender(held, changed: changed, revision: wakeup.revision) {
                register(held, reads: next)
            }
        }
    }

    /// Waits on `reads`; handles a change that already happened at once.
    private func register(_ held: SuspendedRequest, reads: ReadSet) {
        var reads = reads
        while true {
            switch store.wait(for: reads, after: reads.revision, waiter: self) {
            case .waiting(let waiter):
                state.withLock { $0.waiter = waiter }
                // A deadline that fired before the waiter was stored found nothing to cancel.
                if let token = deadline.withLock({ $0 }), !deadlines.isPending(token), store.cancel(waiter) {
                    answerUnchanged(held)
                }
                return
            case .alreadyChanged(let keys, let revision):
                guard let next = rerender(held, changed: store.names(of: keys), revision: revision) else { return }
                reads = next
            }
        }
    }

    /// Renders the view again after `changed`: answers the poll when the client would
    /// see something new, else returns what the new rendering read, to wait on it.
    private func rerender(_ held: SuspendedRequest, changed: [String], revision: UInt64) -> ReadSet? {
        let latest = store.snapshot()
        let renders = identity == nil ? nil : SuspendedRequest.batchLocal(WakeRenders.init)
        let view: RenderedView
        do {
            if let identity, let renders {
                view = try renders.view(for: identity, at: latest.revision) { try route.render(latest) }
            } else {
                view = try route.render(latest)
            }
            WakeTrace.mark(.rendered, revision: revision)
        } catch {
            finish(held, .failure(error))
            return nil
        }
        let (same, names) = state.withLock { state in
            if state.changed.isEmpty && changed.count <= 1 {
                state.changed = changed  // the first wake's one key: shared, not copied
            } else {
                for name in changed where !state.changed.contains(name) { state.changed.append(name) }
            }
            let same = view.hasSameContent(as: state.view) && !view.reads.keys.isEmpty
            state.view = view
            return (same, state.changed)
        }
        guard same else {
            if WakeTrace.isEnabled { held.traceWake(revision: revision) }
            answerFresh(held, view, epoch: latest.epoch, changed: names, renders: renders)
            WakeTrace.mark(.answered, revision: revision)
            return nil
        }
        return view.reads
    }

    /// Answers with a new rendering; shared when nothing in the answer is this poll's own,
    /// under a key that `renders`, the batch's, keeps for the polls answered after it.
    private func answerFresh(
        _ held: SuspendedRequest, _ view: RenderedView, epoch: String, changed: [String], renders: WakeRenders?
    ) {
        guard requestID == nil, let name = view.sharedAs else {
            finish(held, .success(.fresh(view, epoch: epoch, changed: changed)))
            return
        }
        cancelDeadline()
        // What the answer is made of: its status, the cached rendering (its key and
        // revision name its bytes), the epoch in its ETag, and the changed keys.
        // A local function, not a closure in a constant, which would be allocated.
        func parts() -> [String] {
            var key: [String] = []
            key.reserveCapacity(5 + changed.count)
            key.append("200")
            key.append(name.grant.cacheKey)
            key.append(name.view)
            key.append(String(view.revision))
            key.append(epoch)
            key.append(contentsOf: changed)
            return key
        }
        let key = renders?.answerKey(name, view, epoch: epoch, changed: changed, make: parts) ?? parts()
        if held.respond(sharing: key, { Answer.fresh(view, epoch: epoch, changed: changed).response(requestID: nil) }) {
            route.counted(200)
        }
    }

    private func finish(_ held: SuspendedRequest, _ result: Result<Answer, any Error>) {
        cancelDeadline()
        held.respond(answer(result))
    }

    /// This poll's own answer for `result`, logged and counted.
    private func answer(_ result: Result<Answer, any Error>) -> HTTPResponse {
        route.finish(result.map { $0.response(requestID: requestID) })
    }

    private func cancelDeadline() {
        if let token = deadline.withLock({ $0 }) { deadlines.cancel(token) }
    }
}

/// Random numbers for spreading deadlines: SplitMix64 over one shared counter, seeded at
/// random once. The system generator costs a `getrandom` call each, once per held poll;
/// a deadline's jitter needs spread, not secrecy.
struct JitterGenerator: RandomNumberGenerator {
    private static let counter = Atomic<UInt64>(UInt64.random(in: 0...UInt64.max))

    mutating func next() -> UInt64 {
        var z = Self.counter.wrappingAdd(0x9E37_79B9_7F4A_7C15, ordering: .relaxed).newValue
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
