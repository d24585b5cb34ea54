import LookoutJSON

/// Documents by id, shared between snapshots: a write copies one chunk of at most 16
/// documents and, above it, three nodes of at most 16 references, and the table of top
/// nodes (one per 65,536 ids), whatever the collection's size.
///
/// A plain `[Int: StoredDocument]` would be copied whole on each write, because the
/// published snapshot still holds it (measured: ~1 ms per write at 20,000 documents,
/// mostly retain/release; Benchmarks/README.md). With one level of chunks, the table of
/// chunk references was still copied (a retain of each, and a release when the snapshot
/// goes): a PATCH took 57 µs longer at 400,000 documents than at 20,000. With chunks and
/// groups of 64, a write still retained ~190 objects it did not change (each document
/// holds two), most of them cold: ~8 µs of a PATCH went to those retains. Nodes of 16
/// retain ~70.
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

        /// `body` applied to the element in `key`'s slot, read in place; nil when the slot
        /// is empty.
        func withElement<Result>(_ key: Int, _ body: (Element) -> Result?) -> Result? {
            let (index, isPresent) = index(of: key)
            guard isPresent else { return nil }
            return withElements { body($0[index]) }
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
    private typealias Level1 = Node<Chunk>
    private typealias Level2 = Node<Level1>
    private typealias Level3 = Node<Level2>

    private static let slotBits = 4
    private static let slotMask = (1 << slotBits) - 1
    /// Top nodes by `id >> (4 × slotBits)`; below each, nodes by the next four bits of the
    /// id at each level, down to the chunk, where documents are by the id's low four bits.
    private var tops: [Int: Level3] = [:]

    init() {}

    /// A table holding `documents`, built level by level from the chunks up.
    init(_ documents: [Int: StoredDocument]) {
        let chunks = Self.nodes(documents.map { (key: $0.key, element: $0.value) })
        tops = Dictionary(uniqueKeysWithValues: Self.nodes(Self.nodes(Self.nodes(chunks))))
    }

    /// `members` in nodes by their keys' bits above the slot's: each node under that key.
    private static func nodes<Element>(_ members: [(key: Int, element: Element)]) -> [(
        key: Int, element: Node<Element>
    )] {
        var grouped: [Int: [(key: Int, element: Element)]] = [:]
        for member in members { grouped[member.key >> slotBits, default: []].append(member) }
        return grouped.map { (key: $0.key, element: node($0.value)) }
    }

    /// A node holding each element at its key's slot (the keys share all but those bits).
    private static func node<Element>(_ members: [(key: Int, element: Element)]) -> Node<Element> {
        let sorted = members.sorted { $0.key < $1.key }
        let present = sorted.reduce(UInt64(0)) { $0 | UInt64(1) << UInt64($1.key & slotMask) }
        return Node.make(present: present) { target in
            for (index, member) in sorted.enumerated() { (target + index).initialize(to: member.element) }
        }
    }

    /// Field `name` of document `id` and the revision that last changed it (its creation
    /// if never written since); nil when there is no such document. Only the field's
    /// value is copied out, not the whole document as the subscript does.
    func field(_ name: String, of id: Int) -> (value: JSONValue?, revision: UInt64)? {
        withDocument(id) { ($0.fields[name], $0.revision(of: name)) }
    }

    /// `body` applied to document `id`, read in place; nil when there is none.
    ///
    /// Through buffer pointers: subscripts that return elements copy each node on the way
    /// (a retain and a release on an object every reader shares).
    private func withDocument<Result>(_ id: Int, _ body: (StoredDocument) -> Result?) -> Result? {
        tops[id >> (4 * Self.slotBits)]?.withElement(id >> (3 * Self.slotBits)) { level2 in
            level2.withElement(id >> (2 * Self.slotBits)) { level1 in
                level1.withElement(id >> Self.slotBits) { chunk in chunk.withElement(id, body) }
            }
        }
    }

    subscript(id: Int) -> StoredDocument? {
        get { withDocument(id) { $0 } }
        set {
            let top = tops[id >> (4 * Self.slotBits)]
            let level2 = top?[id >> (3 * Self.slotBits)]
            let level1 = level2?[id >> (2 * Self.slotBits)]
            let chunk = level1?[id >> Self.slotBits]
            // Removing an absent document changes nothing: no copy of any node or the table.
            if newValue == nil && chunk?.index(of: id).isPresent != true { return }
            let replacedChunk = Chunk.replacing(id, with: newValue, in: chunk)
            let replacedLevel1 = Level1.replacing(id >> Self.slotBits, with: replacedChunk, in: level1)
            let replacedLevel2 = Level2.replacing(id >> (2 * Self.slotBits), with: replacedLevel1, in: level2)
            tops[id >> (4 * Self.slotBits)] = Level3.replacing(id >> (3 * Self.slotBits), with: replacedLevel2, in: top)
        }
    }
}
