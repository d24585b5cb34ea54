/// Documents by id, shared between snapshots: a write copies one chunk of at most 64
/// documents and the table of chunk references, not every document.
///
/// A plain `[Int: StoredDocument]` would be copied whole on each write, because the
/// published snapshot still holds it (measured: ~1 ms per write at 20,000 documents,
/// mostly retain/release; Benchmarks/README.md).
struct DocumentTable: Sendable {
    /// Immutable, so snapshots can share it; replaced, never changed.
    private final class Chunk: Sendable {
        let documents: [Int: StoredDocument]

        init(_ documents: [Int: StoredDocument]) {
            self.documents = documents
        }
    }

    private static let chunkShift = 6
    private var chunks: [Int: Chunk] = [:]

    init() {}

    /// A table holding `documents`, built chunk by chunk.
    init(_ documents: [Int: StoredDocument]) {
        var grouped: [Int: [Int: StoredDocument]] = [:]
        for (id, document) in documents {
            grouped[id >> Self.chunkShift, default: [:]][id] = document
        }
        chunks = grouped.mapValues(Chunk.init)
    }

    subscript(id: Int) -> StoredDocument? {
        get { chunks[id >> Self.chunkShift]?.documents[id] }
        set {
            let key = id >> Self.chunkShift
            var documents = chunks[key]?.documents ?? [:]
            documents[id] = newValue
            chunks[key] = documents.isEmpty ? nil : Chunk(documents)
        }
    }
}
