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
    private let woken = Atomic<UInt64>(0)

    /// Builds the store from declared collections, all at revision 1 (0 when empty).
    /// - Parameter epoch: identifies this store's history in cursors.
    /// - Throws: ``StoreError/duplicateCollection(_:)``.
    public init(_ collections: [DocumentCollection], epoch: String) throws(StoreError) {
        var states: [String: CollectionState] = [:]
        let revision: UInt64 = collections.isEmpty ? 0 : 1
        for collection in collections {
            var documents: [Int: StoredDocument] = [:]
            var ids: [Int] = []
            for document in collection.documents {
                let id = document["id"]!.intValue!
                ids.append(id)
                documents[id] = StoredDocument(fields: document, revisions: [:], created: revision)
            }
            let state = CollectionState(
                options: collection.options, ids: ids, documents: DocumentTable(documents),
                membershipRevision: revision)
            guard states.updateValue(state, forKey: collection.name) == nil else {
                throw .duplicateCollection(collection.name)
            }
        }
        for collection in collections {
            for (field, target) in collection.options.references where states[target] == nil {
                throw .invalidOptions(
                    collection: collection.name, reason: "reference \(field) names no collection \"\(target)\"")
            }
        }
        current = Mutex(StoreSnapshot(epoch: epoch, revision: revision, collections: states))
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
