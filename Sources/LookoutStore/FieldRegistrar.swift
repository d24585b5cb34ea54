import Synchronization

/// Who waits for which keys, and the revision at which each key last changed: the
/// engine of long-polls, with Observation's semantics and none of its measured holes
/// (DESIGN.md §1–2, notes/observation.md).
///
/// - Registering is atomic with the revision check: a waiter whose keys changed after
///   its cursor is not registered but told at once, so no commit can slip between a read
///   and the registration.
/// - ``commit(_:revision:)`` is called after the write is visible to readers, so a woken
///   waiter that reads again sees at least the revision that woke it.
/// - A commit detaches the waiters of the changed keys under the lock and wakes them
///   after releasing it; a woken waiter is removed from all its other keys.
/// - Waiters are cancelled explicitly (deadline, shutdown); nothing stays registered.
///
/// Keys are the small non-negative integers the store interns field and membership keys
/// to. Storage is dense: per key a revision and the head of an intrusive list of
/// watchers; waiters and list nodes live in pooled arrays, so registering allocates
/// nothing once the pools have grown.
public final class FieldRegistrar: Sendable {
    /// An interned field or membership key: `0..<Int32.max`.
    public typealias Key = Int

    /// Called once per waiter, outside the registrar's lock, on the committing thread.
    public typealias Wake = @Sendable (Wakeup) -> Void

    /// A waiter that is its own wake, as a held long-poll is: registering it allocates
    /// nothing, and a commit that wakes a crowd of them frees nothing per waiter (a
    /// closure's context is freed by whichever thread drops it last: the committing one).
    public protocol Waiter: AnyObject, Sendable {
        /// Called once, outside the registrar's lock, on the committing thread.
        func wake(_ wakeup: Wakeup)
    }

    /// A ``Wake`` closure as a ``Waiter``.
    private final class ClosureWaiter: Waiter {
        let body: Wake

        init(_ body: @escaping Wake) {
            self.body = body
        }

        func wake(_ wakeup: Wakeup) {
            body(wakeup)
        }
    }

    /// Why a waiter was woken.
    public struct Wakeup: Sendable, Equatable {
        /// The waiter's keys that this commit changed.
        public let changed: [Key]
        /// The commit's revision.
        public let revision: UInt64
    }

    /// The outcome of ``register(_:after:wake:)``.
    public enum Registration: Sendable, Equatable {
        /// Waiting; pass the id to ``cancel(_:)`` at the deadline.
        case waiting(WaiterID)
        /// Some keys already changed after the cursor: answer at once.
        case alreadyChanged(changed: [Key], revision: UInt64)
    }

    /// Identifies a registered waiter: its slot and the slot's generation, so that an
    /// id kept past its waiter's end never reaches the slot's next occupant.
    public struct WaiterID: Hashable, Sendable {
        let slot: Int32
        let generation: UInt32
    }

    private let state = Mutex(RegistrarState())

    /// What a commit woke, as it hands it over: each waiter, with its keys.
    private typealias Woken = [(waiter: any Waiter, keys: [Key])]

    /// The woken waiters kept while a ``keepingWoken(_:)`` runs, released when the last
    /// one running ends: those of commits that woke at most ``keptCrowd``.
    private struct Kept {
        var scopes = 0
        var woken: [Woken] = []
    }

    private let kept = Mutex(Kept())

    /// A commit that wakes more waiters than this releases each as soon as it is woken,
    /// scope or not. The waiters a crowd wakes on other event loops are freed by those
    /// loops, in parallel, when the commit has let go first; kept, every one of them would
    /// be freed on the committing thread (a fan-out to 10,000 went from 217/300 to
    /// 331/308 ms, Benchmarks/README.md, stop 40), and so would those whose loop ran their
    /// work before the commit had woken the rest (stop 46).
    public static let keptCrowd = 64

    public init() {}

    /// Runs `body`; the waiters that commits wake meanwhile are released after it, not
    /// when each commit has woken them.
    ///
    /// A woken held poll has answered by the time its commit returns, and the commit's
    /// list is often its last reference: releasing it frees the poll, its request and its
    /// old rendering, cold memory, before the answer is even resumed. A writer wraps its
    /// write and the sending of the answers in this, so that this work comes after them.
    /// Scopes running at once on several threads keep the waiters until the last ends. A
    /// commit that wakes a crowd (more than ``keptCrowd``) releases its waiters itself.
    public func keepingWoken<Result>(_ body: () throws -> Result) rethrows -> Result {
        kept.withLock { $0.scopes += 1 }
        defer {
            let released = kept.withLock { kept -> [Woken] in
                kept.scopes -= 1
                guard kept.scopes == 0 else { return [] }
                defer { kept.woken = [] }
                return kept.woken
            }
            withExtendedLifetime(released) {}  // freed here, outside the lock
        }
        return try body()
    }

    /// Waits for a change to any of `keys` after revision `cursor`.
    ///
    /// `wake` runs at most once, after a later commit to one of the keys, unless the
    /// waiter is cancelled first.
    /// - Precondition: `keys` is not empty and holds valid keys.
    public func register(_ keys: [Key], after cursor: UInt64, wake: @escaping Wake) -> Registration {
        register(keys, after: cursor, waiter: ClosureWaiter(wake))
    }

    /// Waits for a change to any of `keys` after revision `cursor`; as
    /// ``register(_:after:wake:)``, with `waiter.wake` for the closure. The registrar holds
    /// `waiter` until it is woken or cancelled.
    public func register(_ keys: [Key], after cursor: UInt64, waiter: any Waiter) -> Registration {
        precondition(!keys.isEmpty, "a waiter needs at least one key")
        // Each key once: a waiter is linked at most once into a key's list.
        let keys = keys.count == 1 ? keys : Self.distinct(keys)
        return state.withLock { state in
            var changed: [Key] = []
            var newest: UInt64 = 0
            for key in keys {
                let revision = state.revision(of: key)
                if revision > cursor {
                    changed.append(key)
                    newest = max(newest, revision)
                }
            }
            guard changed.isEmpty else { return .alreadyChanged(changed: changed, revision: newest) }
            return .waiting(state.add(keys: keys, cursor: cursor, waiter: waiter))
        }
    }

    /// Removes a waiter that has not been woken.
    /// - Returns: true if it was still waiting (it will not be woken); false if it was
    ///   already woken or cancelled.
    @discardableResult
    public func cancel(_ id: WaiterID) -> Bool {
        state.withLock { state in
            guard state.isLive(id) else { return false }
            _ = state.remove(slot: id.slot)
            return true
        }
    }

    /// Records that `keys` changed at `revision` and wakes their waiters.
    ///
    /// Call it after the write is visible to readers, in revision order.
    /// - Returns: how many waiters were woken.
    /// - Precondition: `revision` is higher than that of every earlier commit to these keys.
    @discardableResult
    public func commit(_ keys: [Key], revision: UInt64) -> Int {
        var woken: Woken = []
        state.withLock { state in
            for key in keys {
                let previous = state.setRevision(revision, of: key)
                precondition(previous <= revision, "commits must come in revision order")
                guard previous < revision else { continue }  // a key listed twice
                state.detachWatchers(of: key, before: revision, into: &woken)
            }
        }
        guard !woken.isEmpty else { return 0 }
        // Which of its keys this commit changed, worked out outside the lock.
        let changedKeys = keys.count > 8 ? Set(keys) : nil
        func wake(_ waiter: any Waiter, _ watched: [Key]) {
            let changed =
                watched.count == 1 ? watched : watched.filter { changedKeys?.contains($0) ?? keys.contains($0) }
            waiter.wake(Wakeup(changed: changed, revision: revision))
        }
        let count = woken.count
        guard count > Self.keptCrowd else {
            for (waiter, watched) in woken { wake(waiter, watched) }
            kept.withLock { kept in
                if kept.scopes > 0 { kept.woken.append(woken) }
            }
            return count
        }
        // A crowd: each waiter let go as soon as it is woken, so that one whose wake
        // hands work to another thread (a held poll on another event loop) is freed there,
        // by that work, not here after all the others are woken.
        woken.reverse()
        while let (waiter, watched) = woken.popLast() {
            wake(waiter, watched)
        }
        return count
    }

    /// The revision at which `key` last changed; 0 if never.
    public func revision(of key: Key) -> UInt64 {
        state.withLock { $0.revision(of: key) }
    }

    /// Waiters still registered.
    public var waiterCount: Int {
        state.withLock { $0.liveWaiters }
    }

    /// Keys with at least one waiter.
    public var watchedKeyCount: Int {
        state.withLock { $0.watchedKeys }
    }

    private static func distinct(_ keys: [Key]) -> [Key] {
        var seen = Set<Key>(minimumCapacity: keys.count)
        return keys.filter { seen.insert($0).inserted }
    }
}

/// The registrar's state, only touched under its lock.
///
/// Each (waiter, key) pair is a node in the key's doubly linked list of watchers, so
/// linking, unlinking and cancelling are O(1) per key.
struct RegistrarState {
    typealias Key = FieldRegistrar.Key

    private struct Node {
        var slot: Int32
        var key: Int32
        var previous: Int32
        var next: Int32
    }

    private struct Waiter {
        var generation: UInt32 = 0
        var isLive = false
        var cursor: UInt64 = 0
        var registered: (any FieldRegistrar.Waiter)?
        /// The node of the first key; most waiters have one key.
        var firstNode: Int32 = -1
        /// The nodes of the other keys, if any.
        var otherNodes: [Int32] = []
    }

    private static let none: Int32 = -1

    private var revisions: [UInt64] = []
    private var heads: [Int32] = []
    private var nodes: [Node] = []
    private var freeNodes: [Int32] = []
    private var waiters: [Waiter] = []
    private var freeWaiters: [Int32] = []
    private(set) var liveWaiters = 0
    private(set) var watchedKeys = 0

    func revision(of key: Key) -> UInt64 {
        key < revisions.count ? revisions[key] : 0
    }

    /// Sets the revision of `key` and returns its previous one.
    mutating func setRevision(_ revision: UInt64, of key: Key) -> UInt64 {
        grow(to: key)
        defer { revisions[key] = max(revisions[key], revision) }
        return revisions[key]
    }

    func isLive(_ id: FieldRegistrar.WaiterID) -> Bool {
        Int(id.slot) < waiters.count && waiters[Int(id.slot)].isLive
            && waiters[Int(id.slot)].generation == id.generation
    }

    mutating func add(keys: [Key], cursor: UInt64, waiter registered: any FieldRegistrar.Waiter)
        -> FieldRegistrar.WaiterID
    {
        let slot: Int32
        if let free = freeWaiters.popLast() {
            slot = free
        } else {
            slot = Int32(waiters.count)
            waiters.append(Waiter())
        }
        var waiter = waiters[Int(slot)]
        waiter.generation &+= 1
        waiter.isLive = true
        waiter.cursor = cursor
        waiter.registered = registered
        waiter.firstNode = link(slot: slot, key: keys[0])
        waiter.otherNodes.removeAll(keepingCapacity: true)
        for key in keys.dropFirst() {
            waiter.otherNodes.append(link(slot: slot, key: key))
        }
        waiters[Int(slot)] = waiter
        liveWaiters += 1
        return FieldRegistrar.WaiterID(slot: slot, generation: waiter.generation)
    }

    /// Ends a live waiter: unlinks it from every key and frees its slot.
    /// - Returns: what it registered and its keys other than the first (usually none, so
    ///   that waking a crowd allocates nothing per waiter).
    mutating func remove(slot: Int32) -> (waiter: any FieldRegistrar.Waiter, firstKey: Key, otherKeys: [Key]) {
        var waiter = waiters[Int(slot)]
        let firstKey = Key(nodes[Int(waiter.firstNode)].key)
        unlink(waiter.firstNode)
        var otherKeys: [Key] = []
        if !waiter.otherNodes.isEmpty {
            otherKeys.reserveCapacity(waiter.otherNodes.count)
            for node in waiter.otherNodes {
                otherKeys.append(Key(nodes[Int(node)].key))
                unlink(node)
            }
        }
        let registered = waiter.registered!
        waiter.isLive = false
        waiter.registered = nil
        waiter.firstNode = Self.none
        waiters[Int(slot)] = waiter
        freeWaiters.append(slot)
        liveWaiters -= 1
        return (registered, firstKey, otherKeys)
    }

    /// Removes the watchers of `key` whose cursor is before `revision`, collecting each
    /// with the keys it watched. Watchers that already saw `revision` stay.
    mutating func detachWatchers(
        of key: Key,
        before revision: UInt64,
        into woken: inout [(waiter: any FieldRegistrar.Waiter, keys: [Key])]
    ) {
        let onlyThisKey = [key]  // shared by every single-key watcher
        var node = heads[key]
        while node != Self.none {
            let next = nodes[Int(node)].next
            let slot = nodes[Int(node)].slot
            if waiters[Int(slot)].cursor < revision {
                let removed = remove(slot: slot)
                woken.append(
                    (removed.waiter, removed.otherKeys.isEmpty ? onlyThisKey : [removed.firstKey] + removed.otherKeys))
            }
            node = next
        }
    }

    private mutating func grow(to key: Key) {
        precondition(key >= 0 && key < Int(Int32.max), "keys are interned to 0..<Int32.max")
        if key >= revisions.count {
            let count = max(key + 1, revisions.count * 2)
            revisions.append(contentsOf: repeatElement(0, count: count - revisions.count))
            heads.append(contentsOf: repeatElement(Self.none, count: count - heads.count))
        }
    }

    private mutating func link(slot: Int32, key: Key) -> Int32 {
        grow(to: key)
        let node: Int32
        let entry = Node(slot: slot, key: Int32(key), previous: Self.none, next: heads[key])
        if let free = freeNodes.popLast() {
            node = free
            nodes[Int(node)] = entry
        } else {
            node = Int32(nodes.count)
            nodes.append(entry)
        }
        if heads[key] == Self.none {
            watchedKeys += 1
        } else {
            nodes[Int(heads[key])].previous = node
        }
        heads[key] = node
        return node
    }

    private mutating func unlink(_ node: Int32) {
        let entry = nodes[Int(node)]
        if entry.previous == Self.none {
            heads[Int(entry.key)] = entry.next
            if entry.next == Self.none { watchedKeys -= 1 }
        } else {
            nodes[Int(entry.previous)].next = entry.next
        }
        if entry.next != Self.none {
            nodes[Int(entry.next)].previous = entry.previous
        }
        freeNodes.append(node)
    }
}
