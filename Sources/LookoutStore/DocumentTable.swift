import LookoutJSON

/// Documents by id, shared between snapshots: a write copies one chunk of at most 64
/// documents, one group of at most 64 chunk references, and the table of group
/// references, whatever the collection's size.
///
/// A plain `[Int: StoredDocument]` would be copied whole on each write, because the
/// published snapshot still holds it (measured: ~1 ms per write at 20,000 documents,
/// mostly retain/release; Benchmarks/README.md). With one level of chunks, the table of
/// chunk references was still copied (a retain of each, and a release when the snapshot
/// goes): a PATCH took 57 µs longer at 400,000 documents than at 20,000.
///
/// `@unchecked Sendable`: its nodes are never changed once made, but a `ManagedBuffer`
/// subclass cannot be declared `Sendable`.
struct DocumentTable: @unchecked Sendable {
    /// The elements of up to 64 slots, by the low ``slotBits`` bits of a key. Immutable, so
    /// snapshots can share it; replaced, never changed.
    ///
    /// Elements in slot order with a bit per slot in use, not a dictionary: a list query
    /// reads a field of every document, and an element is read in place, where a
    /// dictionary's is copied out whole (a retain and a release per field of the
    /// document, on objects both server threads share) after hashing the id again.
    ///
    /// One allocation: the bits are the header, the elements follow it (a class holding
    /// an array was two, and a write makes two nodes).
    private final class Node<Element>: ManagedBuffer<UInt64, Element> {
        /// Bit `slot` is set for each slot in use.
        var present: UInt64 { header }

        /// A node with the slots in `present`, whose elements `initialize` sets, all
        /// `present.nonzeroBitCount` of them, by ascending slot.
        static func make(present: UInt64, _ initialize: (UnsafeMutablePointer<Element>) -> Void) -> Node {
            let made = create(minimumCapacity: present.nonzeroBitCount) { _ in present }
            made.withUnsafeMutablePointerToElements(initialize)
            return unsafeDowncast(made, to: Node.self)
        }

        deinit {
            _ = withUnsafeMutablePointers { present, elements in
                elements.deinitialize(count: present.pointee.nonzeroBitCount)
            }
        }

        /// Calls `body` with the elements, by ascending slot, read in place.
        func withElements<Result>(_ body: (UnsafeBufferPointer<Element>) throws -> Result) rethrows -> Result {
            try withUnsafeMutablePointers { present, elements in
                try body(UnsafeBufferPointer(start: elements, count: present.pointee.nonzeroBitCount))
            }
        }

        /// The index among the elements that the element of `key`'s slot has, or would have.
        func index(of key: Int) -> (index: Int, isPresent: Bool) {
            let bit = UInt64(1) << UInt64(key & DocumentTable.slotMask)
            return ((present & (bit - 1)).nonzeroBitCount, present & bit != 0)
        }

        subscript(key: Int) -> Element? {
            let (index, isPresent) = index(of: key)
            return isPresent ? withElements { $0[index] } : nil
        }

        /// A node like `node` with `key`'s slot holding `element` (emptied for nil); nil
        /// when no slot is left in use.
        static func replacing(_ key: Int, with element: Element?, in node: Node?) -> Node? {
            let bit = UInt64(1) << UInt64(key & DocumentTable.slotMask)
            let old = node?.present ?? 0
            let index = (old & (bit - 1)).nonzeroBitCount
            let present: UInt64
            switch (old & bit != 0, element) {
            case (false, nil): return node
            case (true, nil): present = old & ~bit
            default: present = old | bit
            }
            guard present != 0 else { return nil }
            return make(present: present) { target in
                guard let node else {
                    target.initialize(to: element!)  // a first element: the only one
                    return
                }
                node.withElements { source in
                    let tail = old & bit != 0 ? index + 1 : index
                    target.initialize(from: source.baseAddress!, count: index)
                    var next = index
                    if let element {
                        (target + next).initialize(to: element)
                        next += 1
                    }
                    (target + next).initialize(from: source.baseAddress! + tail, count: source.count - tail)
                }
            }
        }
    }

    private typealias Chunk = Node<StoredDocument>
    private typealias Group = Node<Chunk>

    private static let slotBits = 6
    private static let slotMask = (1 << slotBits) - 1
    /// Groups by `id >> (2 × slotBits)`; within one, chunks by the next six bits of the
    /// id; within a chunk, documents by its low six bits.
    private var groups: [Int: Group] = [:]

    init() {}

    /// A table holding `documents`, built chunk by chunk.
    init(_ documents: [Int: StoredDocument]) {
        var chunks: [Int: [(id: Int, document: StoredDocument)]] = [:]
        for (id, document) in documents {
            chunks[id >> Self.slotBits, default: []].append((id, document))
        }
        var grouped: [Int: [(key: Int, chunk: Chunk)]] = [:]
        for (key, members) in chunks {
            grouped[key >> Self.slotBits, default: []].append((key, Self.node(members.map { ($0.id, $0.document) })))
        }
        groups = grouped.mapValues { Self.node($0.map { ($0.key, $0.chunk) }) }
    }

    /// A node holding each element at its key's slot (the keys share all but those bits).
    private static func node<Element>(_ members: [(key: Int, element: Element)]) -> Node<Element> {
        let sorted = members.sorted { $0.key < $1.key }
        let present = sorted.reduce(UInt64(0)) { $0 | UInt64(1) << UInt64($1.key & slotMask) }
        return Node.make(present: present) { target in
            for (index, member) in sorted.enumerated() { (target + index).initialize(to: member.element) }
        }
    }

    private func chunk(of id: Int) -> Chunk? {
        groups[id >> (2 * Self.slotBits)]?[id >> Self.slotBits]
    }

    /// Field `name` of document `id` and the revision that last changed it (its creation
    /// if never written since); nil when there is no such document. Only the field's
    /// value is copied out, not the whole document as the subscript does.
    func field(_ name: String, of id: Int) -> (value: JSONValue?, revision: UInt64)? {
        guard let group = groups[id >> (2 * Self.slotBits)] else { return nil }
        let (chunkIndex, hasChunk) = group.index(of: id >> Self.slotBits)
        guard hasChunk else { return nil }
        // Read in place, through buffer pointers: subscripts that return elements copy the chunk
        // (a retain and a release on an object every reader shares) and the document (a
        // retain and a release of each of its members).
        return group.withElements { chunks in
            let (index, isPresent) = chunks[chunkIndex].index(of: id)
            guard isPresent else { return nil }
            return chunks[chunkIndex].withElements {
                ($0[index].fields[name], $0[index].revision(of: name))
            }
        }
    }

    subscript(id: Int) -> StoredDocument? {
        get { chunk(of: id)?[id] }
        set {
            let key = id >> (2 * Self.slotBits)
            let group = groups[key]
            let chunk = group?[id >> Self.slotBits]
            // Removing an absent document changes nothing: no copy of the group or table.
            if newValue == nil && chunk?.index(of: id).isPresent != true { return }
            let replaced = Chunk.replacing(id, with: newValue, in: chunk)
            groups[key] = Group.replacing(id >> Self.slotBits, with: replaced, in: group)
        }
    }
}
