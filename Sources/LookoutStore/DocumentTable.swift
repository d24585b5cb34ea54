import LookoutJSON

/// Documents by id, shared between snapshots: a write copies one chunk of at most 16
/// documents, one group of at most 16 chunk references, one block of at most 16 group
/// references, and the table of block references, whatever the collection's size.
///
/// A plain `[Int: StoredDocument]` would be copied whole on each write, because the
/// published snapshot still holds it (measured: ~1 ms per write at 20,000 documents,
/// mostly retain/release; Benchmarks/README.md). With one level of chunks, the table of
/// chunk references was still copied (a retain of each, and a release when the snapshot
/// goes): a PATCH took 57 µs longer at 400,000 documents than at 20,000. Nodes of 64 and
/// two levels copied 64 documents a write, each through its value witness (a retain of
/// its members and of its revisions, then their releases when the snapshot went): 4% of
/// a single wake's CPU (Benchmarks/README.md, stop 41). Nodes of 16 copy a quarter of
/// that and add one level.
///
/// `@unchecked Sendable`: its nodes are never changed once made, but a `ManagedBuffer`
/// subclass cannot be declared `Sendable`.
struct DocumentTable: @unchecked Sendable {
    /// The elements of up to 16 slots, by the low ``slotBits`` bits of a key. Immutable, so
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

        /// Copies `count` elements from `source` into uninitialized `target`, one by one.
        ///
        /// `initialize(from:count:)` copies a non-trivial element through the runtime's
        /// `swift_arrayInitWithCopy`, which calls the type's value witness per element
        /// (~90 instructions for a document, ~60 for a node reference, counted by
        /// callgrind); a loop in code specialized for the element type is its retains alone.
        /// (The deinitializer keeps the runtime's bulk `swift_arrayDestroy`: a generic
        /// class's `deinit` is never specialized, so a loop there calls it per element.)
        @inline(__always)
        private static func copy(_ source: UnsafePointer<Element>, to target: UnsafeMutablePointer<Element>, count: Int)
        {
            for index in 0..<count { (target + index).initialize(to: source[index]) }
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

        /// Calls `body` with the element of `key`'s slot, read in place; nil, without calling
        /// it, when the slot is empty.
        func withElement<Result>(at key: Int, _ body: (Element) throws -> Result?) rethrows -> Result? {
            let (index, isPresent) = index(of: key)
            guard isPresent else { return nil }
            return try withElements { try body($0[index]) }
        }

        subscript(key: Int) -> Element? {
            withElement(at: key) { $0 }
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
                    copy(source.baseAddress!, to: target, count: index)
                    var next = index
                    if let element {
                        (target + next).initialize(to: element)
                        next += 1
                    }
                    copy(source.baseAddress! + tail, to: target + next, count: source.count - tail)
                }
            }
        }
    }

    private typealias Chunk = Node<StoredDocument>
    private typealias Group = Node<Chunk>
    private typealias Block = Node<Group>

    private static let slotBits = 4
    private static let slotMask = (1 << slotBits) - 1
    /// Blocks by `id >> (3 × slotBits)`; within one, groups by the next four bits of the
    /// id; within a group, chunks by the four bits below; within a chunk, documents by the
    /// id's low four bits.
    private var blocks: [Int: Block] = [:]

    init() {}

    /// A table holding `documents`, built chunk by chunk.
    init(_ documents: [Int: StoredDocument]) {
        let chunks = Self.nodes(documents.map { ($0.key, $0.value) })
        let groups = Self.nodes(chunks.map { ($0.key, $0.value) })
        blocks = Self.nodes(groups.map { ($0.key, $0.value) })
    }

    /// Nodes holding `members`, by their keys shifted past the slot bits (the keys the
    /// level above files them by).
    private static func nodes<Element>(_ members: [(key: Int, element: Element)]) -> [Int: Node<Element>] {
        var byNode: [Int: [(key: Int, element: Element)]] = [:]
        for member in members {
            byNode[member.key >> slotBits, default: []].append(member)
        }
        return byNode.mapValues(node)
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
        blocks[id >> (3 * Self.slotBits)]?[id >> (2 * Self.slotBits)]?[id >> Self.slotBits]
    }

    /// Field `name` of document `id` and the revision that last changed it (its creation
    /// if never written since); nil when there is no such document. Only the field's
    /// value is copied out, not the whole document as the subscript does.
    func field(_ name: String, of id: Int) -> (value: JSONValue?, revision: UInt64)? {
        // Read in place: subscripts that return elements copy the nodes (a retain and a
        // release on objects every reader shares) and the document (a retain and a release
        // of each of its members).
        blocks[id >> (3 * Self.slotBits)]?.withElement(at: id >> (2 * Self.slotBits)) { group in
            group.withElement(at: id >> Self.slotBits) { chunk in
                chunk.withElement(at: id) { ($0.fields[name], $0.revision(of: name)) }
            }
        }
    }

    subscript(id: Int) -> StoredDocument? {
        get { chunk(of: id)?[id] }
        set {
            let key = id >> (3 * Self.slotBits)
            let block = blocks[key]
            let group = block?[id >> (2 * Self.slotBits)]
            let chunk = group?[id >> Self.slotBits]
            // Removing an absent document changes nothing: no copy of a node or the table.
            if newValue == nil && chunk?.index(of: id).isPresent != true { return }
            let chunkReplaced = Chunk.replacing(id, with: newValue, in: chunk)
            let groupReplaced = Group.replacing(id >> Self.slotBits, with: chunkReplaced, in: group)
            blocks[key] = Block.replacing(id >> (2 * Self.slotBits), with: groupReplaced, in: block)
        }
    }
}
