import LookoutJSON
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
    private let writer = Mutex(())
    private let registrar = FieldRegistrar()
    private let interner = Mutex(KeyInterner())
    private let journal: (any StoreJournal)?
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
        var stored: [String: CollectionImage] = [:]
        for collection in image.collections { stored[collection.name] = collection }
        var states: [String: CollectionState] = [:]
        var added: [CollectionImage] = []
        for declaration in declarations {
            guard states[declaration.name] == nil else { throw .duplicateCollection(declaration.name) }
            let collection = stored[declaration.name] ?? declaration.image(at: image.revision + 1)
            if stored[declaration.name] == nil { added.append(collection) }
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
        var revision = image.revision
        if !added.isEmpty {
            revision += 1
            let entry = JournalEntry(
                revision: revision, memberships: added.map(\.name),
                documents: added.flatMap { collection in
                    collection.documents.map { .init(collection: collection.name, id: $0.id, document: $0) }
                })
            try Self.record(entry, in: journal)
        }
        self.journal = journal
        current = Mutex(StoreSnapshot(epoch: image.epoch, revision: revision, collections: states))
    }

    private static func record(_ entry: JournalEntry, in journal: (any StoreJournal)?) throws(StoreError) {
        do {
            try journal?.record(entry)
        } catch {
            throw .storageFailed(String(describing: error))
        }
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

    /// Applies one write.
    /// - Parameter expectedRevision: the document's revision the writer last saw
    ///   (`If-Match`); the write is refused if the document has changed since.
    /// - Throws: ``StoreError`` for an unknown collection or document, an invalid body,
    ///   a taken id, or a revision mismatch; nothing is changed then.
    @discardableResult
    public func apply(_ mutation: Mutation, expectedRevision: UInt64? = nil) throws(StoreError) -> Commit {
        try writer.withLock { _ throws(StoreError) in
            let before = snapshot()
            var planner = WritePlanner(snapshot: before)
            let plan = try planner.plan(mutation, expectedRevision: expectedRevision)
            guard !plan.changed.isEmpty else {
                return Commit(
                    revision: before.revision, changed: [], id: plan.id, document: plan.document,
                    documentRevision: plan.documentRevision)
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
            try Self.record(entry, in: journal)
            current.withLock { $0 = planner.result }
            let wakeKeys = plan.changed.filter { key in
                guard case .field(let collection, _, let name) = key else { return true }
                return !(before.collections[collection]?.options.ignored.contains(name) ?? false)
            }
            if !wakeKeys.isEmpty {
                let ids = interner.withLock { interner in wakeKeys.map { interner.id(for: $0) } }
                let count = registrar.commit(ids, revision: planner.result.revision)
                woken.add(UInt64(count), ordering: .relaxed)
            }
            return Commit(
                revision: planner.result.revision, changed: plan.changed, id: plan.id, document: plan.document,
                documentRevision: plan.documentRevision)
        }
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
        let ids = interner.withLock { interner in reads.keys.map { interner.id(for: $0) } }
        return registrar.register(ids, after: cursor) { [self] wakeup in
            wake(Change(changed: names(of: wakeup.changed), revision: wakeup.revision))
        }
    }

    /// Names of interned keys, for an `.alreadyChanged` registration.
    public func names(of keys: [FieldRegistrar.Key]) -> [String] {
        interner.withLock { interner in keys.map { interner.key(for: $0).description } }
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

    func key(for id: Int) -> StoreKey {
        keys[id]
    }
}
