import LookoutJSON

/// Documents by id, shared between snapshots: a write copies one chunk of at most 64
/// documents and the table of chunk references, not every document.
///
/// A plain `[Int: StoredDocument]` would be copied whole on each write, because the
/// published snapshot still holds it (measured: ~1 ms per write at 20,000 documents,
/// mostly retain/release; Benchmarks/README.md).
struct DocumentTable: Sendable {
    /// The documents whose ids share all but the low ``chunkShift`` bits. Immutable, so
    /// snapshots can share it; replaced, never changed.
    ///
    /// An array in id order with a bit per id present, not a dictionary: a list query
    /// reads a field of every document, and an array element is read in place, where a
    /// dictionary's is copied out whole (a retain and a release per field of the
    /// document, on objects both server threads share) after hashing the id again.
    private final class Chunk: Sendable {
        /// Bit `id & 63` is set for each id the chunk holds.
        let present: UInt64
        /// The documents by ascending id.
        let documents: [StoredDocument]

        init(present: UInt64, documents: [StoredDocument]) {
            self.present = present
            self.documents = documents
        }

        /// The index in ``documents`` that document `id` has, or would have.
        func index(of id: Int) -> (index: Int, isPresent: Bool) {
            let bit = UInt64(1) << UInt64(id & DocumentTable.chunkMask)
            return ((present & (bit - 1)).nonzeroBitCount, present & bit != 0)
        }

        /// Field `name` of the document at `index` and the revision that last changed it,
        /// read in place (through a buffer pointer: the array's subscript copied the
        /// document, a retain and a release of each of its members).
        func field(_ name: String, at index: Int) -> (value: JSONValue?, revision: UInt64) {
            documents.withUnsafeBufferPointer { ($0[index].fields[name], $0[index].revision(of: name)) }
        }
    }

    private static let chunkShift = 6
    private static let chunkMask = (1 << chunkShift) - 1
    private var chunks: [Int: Chunk] = [:]

    init() {}

    /// A table holding `documents`, built chunk by chunk.
    init(_ documents: [Int: StoredDocument]) {
        var grouped: [Int: [(id: Int, document: StoredDocument)]] = [:]
        for (id, document) in documents {
            grouped[id >> Self.chunkShift, default: []].append((id, document))
        }
        chunks = grouped.mapValues { members in
            let sorted = members.sorted { $0.id < $1.id }
            let present = sorted.reduce(UInt64(0)) { $0 | UInt64(1) << UInt64($1.id & Self.chunkMask) }
            return Chunk(present: present, documents: sorted.map(\.document))
        }
    }

    /// Field `name` of document `id` and the revision that last changed it (its creation
    /// if never written since); nil when there is no such document. Only the field's
    /// value is copied out, not the whole document as the subscript does.
    func field(_ name: String, of id: Int) -> (value: JSONValue?, revision: UInt64)? {
        guard let chunk = chunks[id >> Self.chunkShift] else { return nil }
        let (index, isPresent) = chunk.index(of: id)
        guard isPresent else { return nil }
        return chunk.field(name, at: index)
    }

    subscript(id: Int) -> StoredDocument? {
        get {
            guard let chunk = chunks[id >> Self.chunkShift] else { return nil }
            let (index, isPresent) = chunk.index(of: id)
            return isPresent ? chunk.documents[index] : nil
        }
        set {
            let key = id >> Self.chunkShift
            let bit = UInt64(1) << UInt64(id & Self.chunkMask)
            var present = chunks[key]?.present ?? 0
            var documents = chunks[key]?.documents ?? []
            let index = (present & (bit - 1)).nonzeroBitCount
            switch (present & bit != 0, newValue) {
            case (true, let document?): documents[index] = document
            case (true, nil): documents.remove(at: index)
            case (false, let document?): documents.insert(document, at: index)
            case (false, nil): return
            }
            present = newValue == nil ? present & ~bit : present | bit
            chunks[key] = documents.isEmpty ? nil : Chunk(present: present, documents: documents)
        }
    }
}
