import LookoutJSON
import LookoutTrace
import Synchronization

/// The observable store: collections of JSON documents with a revision per committed
/// write and per key, readable as consistent snapshots, and waitable per key.
///
/// - Reads take a ``StoreSnapshot`` (no lock held while rendering) and record a
///   ``ReadSet``.
/// - Writes are serialized. Each one that changes something gets the next revision; the
///   new snapshot is published first, then the changed keys are committed to the
///   ``FieldRegistrar``, so a woken reader always sees the write that woke it.
/// - A write of values equal to the stored ones changes nothing and wakes nobody;
///   writes to ignored fields are stored but wake nobody.
public final class Store: Sendable {
    /// What a waiter learns when woken.
    public struct Change: Sendable {
        /// The keys it read that changed, by name (`collection/id.field`, `collection`).
        public let changed: [String]
        public let revision: UInt64
    }

    private let current: Mutex<StoreSnapshot>
    /// `current`'s revision, read without its lock.
    private let currentRevision: Atomic<UInt64>
    private let writer = Mutex(())
    private let registrar = FieldRegistrar()
    private let interner = Mutex(KeyInterner())
    private let journal: (any StoreJournal)?
    /// Options of the declared collections, for one another instance adds.
    private let declaredOptions: [String: DocumentCollection.Options]
    private let woken = Atomic<UInt64>(0)

    /// A new store from declared collections, all at revision 1 (0 when empty), kept in
    /// memory only.
    /// - Parameter epoch: identifies this store's history in cursors.
    /// - Throws: ``StoreError`` for a collection declared twice or a bad reference.
    public convenience init(_ collections: [DocumentCollection], epoch: String) throws(StoreError) {
        try self.init(restoring: StoreImage(epoch: epoch, revision: 0, collections: []), declarations: collections)
    }

    /// Restores a store from `image`, serving the `declarations`: a declared collection
    /// that `image` holds keeps its stored documents and revisions (with the declared
    /// options); one it lacks is added from its declared documents at the next revision,
    /// recorded in `journal`. A stored collection that is not declared (any more) is
    /// served with default options.
    /// - Parameter journal: where every write is made durable before it is published.
    /// - Throws: ``StoreError`` for a collection declared twice, a bad reference, or a
    ///   journal that cannot record the added collections.
    public init(
        restoring image: StoreImage,
        declarations: [DocumentCollection],
        journal: (any StoreJournal)? = nil
    ) throws(StoreError) {
        var declared: [String: DocumentCollection.Options] = [:]
        for declaration in declarations {
            guard declared[declaration.name] == nil else { throw .duplicateCollection(declaration.name) }
            declared[declaration.name] = declaration.options
        }
        var image = image
        var outcome: Result<([String: CollectionState], UInt64), StoreError> = .failure(
            .storageFailed("the journal recorded nothing"))
        // Another instance sharing the journal may have written since `image` was loaded
        // (and added the same collections): its commits are taken in first.
        let added = { (committed: [JournalEntry]) -> [JournalEntry] in
            for entry in committed {
                guard entry.revision == image.revision + 1 else {
                    outcome = .failure(.storageFailed("commits before revision \(entry.revision) are missing"))
                    return []
                }
                image.apply(entry)
            }
            do throws(StoreError) {
                let (states, revision) = try Self.restore(image, declarations)
                outcome = .success((states, revision))
                guard revision > image.revision else { return [] }
                return [Self.entry(adding: declarations, to: image, from: states, at: revision)]
            } catch {
                outcome = .failure(error)
                return []
            }
        }
        do {
            if let journal {
                try journal.record(after: image.revision, added)
            } else {
                _ = added([])
            }
        } catch {
            throw .storageFailed(String(describing: error))
        }
        let (states, revision) = try outcome.get()
        self.journal = journal
        self.declaredOptions = declared
        current = Mutex(StoreSnapshot(epoch: image.epoch, revision: revision, collections: states))
        currentRevision = Atomic(revision)
    }

    /// The entry adding the declared collections `image` lacks, as `states` holds them.
    private static func entry(
        adding declarations: [DocumentCollection],
        to image: StoreImage,
        from states: [String: CollectionState],
        at revision: UInt64
    ) -> JournalEntry {
        let stored = Set(image.collections.map(\.name))
        let added = declarations.filter { !stored.contains($0.name) }.map { states[$0.name]!.image(named: $0.name) }
        return JournalEntry(
            revision: revision, memberships: added.map(\.name),
            documents: added.flatMap { collection in
                collection.documents.map { .init(collection: collection.name, id: $0.id, document: $0) }
            })
    }

    /// The collections of `image` with the declared ones it lacks added at the next
    /// revision, and the revision after that (the image's when nothing was added).
    private static func restore(
        _ image: StoreImage,
        _ declarations: [DocumentCollection]
    ) throws(StoreError) -> ([String: CollectionState], UInt64) {
        var stored: [String: CollectionImage] = [:]
        for collection in image.collections { stored[collection.name] = collection }
        var states: [String: CollectionState] = [:]
        var added = false
        for declaration in declarations {
            let collection = stored[declaration.name] ?? declaration.image(at: image.revision + 1)
            if stored[declaration.name] == nil { added = true }
            states[declaration.name] = CollectionState(options: declaration.options, image: collection)
        }
        for collection in image.collections where states[collection.name] == nil {
            states[collection.name] = CollectionState(options: DocumentCollection.Options(), image: collection)
        }
        for declaration in declarations {
            for (field, target) in declaration.options.references where states[target] == nil {
                throw .invalidOptions(
                    collection: declaration.name, reason: "reference \(field) names no collection \"\(target)\"")
            }
        }
        return (states, added ? image.revision + 1 : image.revision)
    }

    /// The served collections as storage keeps them.
    public func image() -> StoreImage {
        let snapshot = snapshot()
        return StoreImage(
            epoch: snapshot.epoch, revision: snapshot.revision,
            collections: snapshot.collections.keys.sorted().map { snapshot.collections[$0]!.image(named: $0) })
    }

    /// Identifies this store's history in cursors.
    public var epoch: String { snapshot().epoch }

    /// The latest committed state.
    public func snapshot() -> StoreSnapshot {
        current.withLock { $0 }
    }

    /// The latest committed revision: ``snapshot()``'s, without taking the snapshot. Once a
    /// write has returned, its revision or a later one.
    public var revision: UInt64 {
        currentRevision.load(ordering: .acquiring)
    }

    /// One write and its `If-Match`, for ``apply(_:)``.
    public struct Write: Sendable {
        public let mutation: Mutation
        /// Revisions of the document the writer accepts; nil: any.
        public let expectedRevisions: Set<UInt64>?

        public init(_ mutation: Mutation, expectedRevisions: Set<UInt64>? = nil) {
            self.mutation = mutation
            self.expectedRevisions = expectedRevisions
        }
    }

    /// Applies one write.
    /// - Parameter expectedRevisions: revisions of the document the writer accepts
    ///   (`If-Match`); the write is refused unless the document is at one of them. nil:
    ///   any revision.
    /// - Throws: ``StoreError`` for an unknown collection or document, an invalid body,
    ///   a taken id, or a revision mismatch; nothing is changed then.
    @discardableResult
    public func apply(_ mutation: Mutation, expectedRevisions: Set<UInt64>? = nil) throws(StoreError) -> Commit {
        try apply([Write(mutation, expectedRevisions: expectedRevisions)])[0].get()
    }

    /// Applies several writes as a group commit: each planned on the ones before it, all
    /// recorded by the journal in one commit, then published in order (each waking its
    /// waiters) once that commit is durable.
    ///
    /// A write the store refuses (an unknown document, a stale `If-Match`) changes nothing
    /// and does not hold up the others; when storage fails, every write that would have
    /// changed something fails with ``StoreError/storageFailed(_:)`` and nothing is kept.
    /// - Returns: per write, in order, its commit or why it was refused.
    public func apply(_ writes: [Write]) -> [Result<Commit, StoreError>] {
        writer.withLock { _ in
            var outcomes: [Result<Planned, StoreError>] = []
            let plan = { (committed: [JournalEntry]) -> [JournalEntry] in
                // Another instance's writes come first; these are planned on them.
                for entry in committed {
                    guard self.publishLocked(entry) else {
                        let missing = StoreError.storageFailed("commits before revision \(entry.revision) are missing")
                        outcomes = writes.map { _ in .failure(missing) }
                        return []
                    }
                }
                var snapshot = self.snapshot()
                outcomes = writes.map { write in
                    let planned = Result { () throws(StoreError) in
                        try self.plan(write.mutation, expectedRevisions: write.expectedRevisions, on: snapshot)
                    }
                    if case .success(let planned) = planned, let publication = planned.publication {
                        snapshot = publication.result
                    }
                    return planned
                }
                return outcomes.compactMap { try? $0.get().publication?.entry }
            }
            do {
                if let journal {
                    try journal.record(after: snapshot().revision, plan)
                } else {
                    _ = plan([])
                }
            } catch {
                // The journal may fail before it asks for the entries (a lost database).
                let failed = StoreError.storageFailed(String(describing: error))
                guard outcomes.count == writes.count else { return writes.map { _ in .failure(failed) } }
                return outcomes.map { outcome in
                    outcome.flatMap { $0.publication == nil ? .success($0.commit) : .failure(failed) }
                }
            }
            WakeTrace.mark(.committed)
            return outcomes.map { outcome in
                outcome.map { planned in
                    if let publication = planned.publication { publish(publication) }
                    return planned.commit
                }
            }
        }
    }

    /// A write planned on the current snapshot, and what publishing it takes (none when
    /// it changes nothing).
    private struct Planned {
        struct Publication {
            let entry: JournalEntry
            let result: StoreSnapshot
            let changed: [StoreKey]
            let before: StoreSnapshot
        }
        let commit: Commit
        let publication: Publication?
    }

    private func plan(_ mutation: Mutation, expectedRevisions: Set<UInt64>?, on before: StoreSnapshot)
        throws(StoreError) -> Planned
    {
        var planner = WritePlanner(snapshot: before)
        let plan = try planner.plan(mutation, expectedRevisions: expectedRevisions)
        WakeTrace.mark(.planned)
        guard !plan.changed.isEmpty else {
            return Planned(
                commit: Commit(
                    revision: before.revision, changed: [], id: plan.id, document: plan.document,
                    documentRevision: plan.documentRevision),
                publication: nil)
        }
        let entry = JournalEntry(
            revision: planner.result.revision,
            memberships: plan.changed.contains(.membership(collection: mutation.collection))
                ? [mutation.collection] : [],
            documents: [
                .init(
                    collection: mutation.collection, id: plan.id,
                    document: planner.result.collections[mutation.collection]?.documents[plan.id]?.image)
            ])
        return Planned(
            commit: Commit(
                revision: planner.result.revision, changed: plan.changed, id: plan.id, document: plan.document,
                documentRevision: plan.documentRevision),
            publication: .init(entry: entry, result: planner.result, changed: plan.changed, before: before))
    }

    private func publish(_ publication: Planned.Publication) {
        publish(publication.result, changing: publication.changed, after: publication.before)
    }

    /// Applies writes another instance committed to the shared journal, in revision
    /// order, waking the waiters on what they changed as a local write would.
    ///
    /// Entries at or below the store's revision were applied already and are skipped;
    /// applying stops at a gap (an entry that does not follow the store's revision), so
    /// nothing is skipped or applied twice.
    /// - Returns: the store's revision afterwards.
    @discardableResult
    public func applyCommitted(_ entries: [JournalEntry]) -> UInt64 {
        writer.withLock { _ in
            for entry in entries {
                guard publishLocked(entry) else { break }
            }
            return snapshot().revision
        }
    }

    /// Publishes a committed `entry` if it is the next revision.
    /// - Returns: false at a gap (the entry is past the next revision).
    /// - Precondition: the writer lock is held.
    private func publishLocked(_ entry: JournalEntry) -> Bool {
        let before = snapshot()
        guard entry.revision == before.revision + 1 else { return entry.revision <= before.revision }
        var collections = before.collections
        var changed: [StoreKey] = []
        for name in entry.memberships {
            collections[name, default: emptyCollection(name, at: entry.revision)].membershipRevision = entry.revision
            changed.append(.membership(collection: name))
        }
        for change in entry.documents {
            let name = change.collection
            var state = collections[name] ?? emptyCollection(name, at: entry.revision)
            let old = state.documents[change.id]
            let new = change.document.map(StoredDocument.init)
            changed += Self.changedKeys(old, new, collection: name, id: change.id, revision: entry.revision)
            if old == nil, new != nil { state.ids.append(change.id) }
            if new == nil { state.ids.removeAll { $0 == change.id } }
            state.documents[change.id] = new
            state.countFields(removing: old?.fields, adding: new?.fields)
            collections[name] = state
        }
        publish(
            StoreSnapshot(epoch: before.epoch, revision: entry.revision, collections: collections), changing: changed,
            after: before)
        return true
    }

    private func emptyCollection(_ name: String, at revision: UInt64) -> CollectionState {
        CollectionState(
            options: declaredOptions[name] ?? DocumentCollection.Options(),
            image: CollectionImage(name: name, membershipRevision: revision, documents: []))
    }

    /// The keys of document `id` a committed write changed, from its state before and
    /// after: every field when it was created or deleted, else those it stamped with
    /// `revision` (a removed field is stamped too).
    private static func changedKeys(
        _ old: StoredDocument?,
        _ new: StoredDocument?,
        collection: String,
        id: Int,
        revision: UInt64
    ) -> [StoreKey] {
        guard old != nil, let new else {
            let names = Set((old?.fields.keys ?? []) + (new?.fields.keys ?? [])).subtracting(["id"])
            return [.fieldNames(collection: collection, id: id)]
                + names.sorted().map { .field(collection: collection, id: id, name: $0) }
        }
        var keys = new.revisions.filter { $0.value == revision }.keys.sorted().map {
            StoreKey.field(collection: collection, id: id, name: $0)
        }
        if new.fieldNamesRevision == revision {
            keys.append(.fieldNames(collection: collection, id: id))
        }
        return keys
    }

    /// Publishes `result`, then wakes the waiters on the `changed` keys that are not
    /// ignored (by the options in `before`).
    private func publish(_ result: StoreSnapshot, changing changed: [StoreKey], after before: StoreSnapshot) {
        current.withLock { snapshot in
            snapshot = result
            currentRevision.store(result.revision, ordering: .releasing)
        }
        WakeTrace.publish(revision: result.revision)
        let wakeKeys = changed.filter { key in
            guard case .field(let collection, _, let name) = key else { return true }
            return !(before.collections[collection]?.options.ignored.contains(name) ?? false)
        }
        if !wakeKeys.isEmpty {
            let ids = interner.withLock { interner in wakeKeys.map { interner.id(for: $0) } }
            let count = registrar.commit(ids, revision: result.revision)
            woken.add(UInt64(count), ordering: .relaxed)
        }
    }

    /// Runs `body`, which writes; what its writes leave behind is freed after it, not
    /// inside ``apply(_:)``: the snapshot they replace, and the waiters they wake
    /// (``FieldRegistrar/keepingWoken(_:)``).
    ///
    /// A writer wraps a write and the sending of its woken polls' answers in this. Freeing
    /// the old snapshot frees what a write copied and no snapshot shares any more (its
    /// chunk of 16 documents, each released once); freeing a woken poll frees its request
    /// and its old rendering. Both are several µs of cold memory that would otherwise come
    /// before the woken polls are resumed. (In a group of writes, the snapshots between
    /// them are still freed inside ``apply(_:)``.)
    public func freeingAfter<Result>(_ body: () throws -> Result) rethrows -> Result {
        let replaced = snapshot()
        defer { withExtendedLifetime(replaced) {} }  // freed here, after the waiters
        return try registrar.keepingWoken(body)
    }

    /// Waits for a change to anything in `reads` after `cursor`.
    ///
    /// Atomic with writes: if something read changed after `cursor`, the answer is
    /// `.alreadyChanged` and `wake` is never called.
    /// - Precondition: `reads` is not empty.
    public func wait(
        for reads: ReadSet,
        after cursor: UInt64,
        wake: @escaping @Sendable (Change) -> Void
    ) -> FieldRegistrar.Registration {
        wait(for: reads, after: cursor, waiter: ClosureWaiter(store: self, wake: wake))
    }

    /// Waits for a change to anything in `reads` after `cursor`; as
    /// ``wait(for:after:wake:)``, with `waiter.wake` called with interned keys (name them
    /// with ``names(of:)``) and nothing allocated to hold the wait.
    public func wait(
        for reads: ReadSet,
        after cursor: UInt64,
        waiter: any FieldRegistrar.Waiter
    ) -> FieldRegistrar.Registration {
        let ids = interner.withLock { interner in reads.keys.map { interner.id(for: $0) } }
        return registrar.register(ids, after: cursor, waiter: waiter)
    }

    /// A ``Change`` closure as a registrar's waiter: names the keys that woke it.
    private final class ClosureWaiter: FieldRegistrar.Waiter {
        let store: Store
        let body: @Sendable (Change) -> Void

        init(store: Store, wake: @escaping @Sendable (Change) -> Void) {
            self.store = store
            self.body = wake
        }

        func wake(_ wakeup: FieldRegistrar.Wakeup) {
            body(Change(changed: store.names(of: wakeup.changed), revision: wakeup.revision))
        }
    }

    /// Names of interned keys: for a wake, and for an `.alreadyChanged` registration. The last
    /// list named is kept (``KeyInterner``), so a write waking many waits names its keys once.
    public func names(of keys: [FieldRegistrar.Key]) -> [String] {
        interner.withLock { $0.names(of: keys) }
    }

    /// Stops a wait before it is woken.
    /// - Returns: false if it had already been woken.
    @discardableResult
    public func cancel(_ waiter: FieldRegistrar.WaiterID) -> Bool {
        registrar.cancel(waiter)
    }

    /// Waits still registered.
    public var waiterCount: Int { registrar.waiterCount }

    /// Waits woken by a write since the store was made (not those cancelled, nor those
    /// told `.alreadyChanged`).
    public var wokenCount: UInt64 { woken.load(ordering: .relaxed) }
}

/// Interns ``StoreKey``s to the dense integers the registrar works with.
///
/// Keys are never forgotten: a deleted document's keys stay interned, so the table grows
/// with the number of distinct fields ever written or waited on.
struct KeyInterner {
    private var ids: [StoreKey: Int] = [:]
    private var keys: [StoreKey] = []

    mutating func id(for key: StoreKey) -> Int {
        if let id = ids[key] { return id }
        let id = keys.count
        keys.append(key)
        ids[key] = id
        return id
    }

    /// The last keys named and their names: a write that wakes many waits on the same
    /// keys names them once, and every wait gets the same array.
    private var lastNamed: (keys: [Int], names: [String]) = ([], [])

    mutating func names(of ids: [Int]) -> [String] {
        if ids == lastNamed.keys { return lastNamed.names }
        let names = ids.map { keys[$0].description }
        lastNamed = (ids, names)
        return names
    }
}
