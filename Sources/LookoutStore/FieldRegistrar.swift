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
/// Keys are the integers the store interns field and membership keys to; concrete rather
/// than generic so that every call is specialized.
public final class FieldRegistrar: Sendable {
    /// An interned field or membership key.
    public typealias Key = Int

    /// Called once per waiter, outside the registrar's lock, on the committing thread.
    public typealias Wake = @Sendable (Wakeup) -> Void

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

    /// Identifies a registered waiter.
    public struct WaiterID: Hashable, Sendable {
        let value: UInt64
    }

    private struct Waiter {
        let keys: [Key]
        let cursor: UInt64
        let wake: Wake
    }

    private struct State {
        var revisions: [Key: UInt64] = [:]
        var watchers: [Key: Set<WaiterID>] = [:]
        var waiters: [WaiterID: Waiter] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Waits for a change to any of `keys` after revision `cursor`.
    ///
    /// `wake` runs at most once, after a later commit to one of the keys, unless the
    /// waiter is cancelled first.
    /// - Precondition: `keys` is not empty.
    public func register(_ keys: [Key], after cursor: UInt64, wake: @escaping Wake) -> Registration {
        precondition(!keys.isEmpty, "a waiter needs at least one key")
        return state.withLock { state in
            var changed: [Key] = []
            var newest: UInt64 = 0
            for key in keys {
                let revision = state.revisions[key] ?? 0
                if revision > cursor {
                    changed.append(key)
                    newest = max(newest, revision)
                }
            }
            if !changed.isEmpty {
                return .alreadyChanged(changed: changed, revision: newest)
            }
            state.nextID += 1
            let id = WaiterID(value: state.nextID)
            state.waiters[id] = Waiter(keys: keys, cursor: cursor, wake: wake)
            for key in keys {
                state.watchers[key, default: []].insert(id)
            }
            return .waiting(id)
        }
    }

    /// Removes a waiter that has not been woken.
    /// - Returns: true if it was still waiting (it will not be woken); false if it was
    ///   already woken or cancelled.
    @discardableResult
    public func cancel(_ id: WaiterID) -> Bool {
        state.withLock { state in
            guard let waiter = state.waiters.removeValue(forKey: id) else { return false }
            Self.unwatch(id, keys: waiter.keys, in: &state)
            return true
        }
    }

    /// Records that `keys` changed at `revision` and wakes their waiters.
    ///
    /// Call it after the write is visible to readers, in revision order.
    /// - Returns: how many waiters were woken.
    /// - Precondition: `revision` is higher than that of every earlier commit to these keys.
    @discardableResult
    public func commit(_ keys: some Collection<Key>, revision: UInt64) -> Int {
        var woken: [(wake: Wake, keys: [Key])] = []
        state.withLock { state in
            for key in keys {
                let previous = state.revisions.updateValue(revision, forKey: key) ?? 0
                precondition(previous <= revision, "commits must come in revision order")
                guard previous < revision else { continue }  // a key listed twice
                guard let watching = state.watchers.removeValue(forKey: key) else { continue }
                var keep: Set<WaiterID> = []
                for id in watching {
                    guard let waiter = state.waiters[id] else { continue }
                    // A reader that already saw this commit registered with it as cursor.
                    guard waiter.cursor < revision else {
                        keep.insert(id)
                        continue
                    }
                    state.waiters[id] = nil
                    Self.unwatch(id, keys: waiter.keys, except: key, in: &state)
                    woken.append((waiter.wake, waiter.keys))
                }
                if !keep.isEmpty {
                    state.watchers[key] = keep
                }
            }
        }
        guard !woken.isEmpty else { return 0 }
        let changedKeys = keys.count > 8 ? Set(keys) : nil
        for (wake, watched) in woken {
            let changed = watched.filter { changedKeys?.contains($0) ?? keys.contains($0) }
            wake(Wakeup(changed: changed, revision: revision))
        }
        return woken.count
    }

    /// The revision at which `key` last changed; 0 if never.
    public func revision(of key: Key) -> UInt64 {
        state.withLock { $0.revisions[key] ?? 0 }
    }

    /// Waiters still registered.
    public var waiterCount: Int {
        state.withLock { $0.waiters.count }
    }

    /// Keys with at least one waiter.
    public var watchedKeyCount: Int {
        state.withLock { $0.watchers.count }
    }

    private static func unwatch(_ id: WaiterID, keys: [Key], except skipped: Key? = nil, in state: inout State) {
        for key in keys where key != skipped {
            guard var watching = state.watchers.removeValue(forKey: key) else { continue }
            watching.remove(id)
            if !watching.isEmpty {
                state.watchers[key] = watching
            }
        }
    }
}
