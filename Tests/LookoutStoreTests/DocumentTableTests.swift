import LookoutJSON
import LookoutTestSupport
import Testing

@testable import LookoutStore

@Suite("DocumentTable: documents by id, shared between snapshots")
struct DocumentTableTests {
    /// Ids where the table's levels meet (chunks of 16, groups of 256, blocks of 4,096),
    /// where nodes of 64 used to, negative ids, and the ends of `Int`.
    static func id(_ random: inout SplitMix64) -> Int {
        switch random.below(5) {
        case 0: return random.below(300)
        case 1:
            let edges = [16, 64, 256, 4_096, 65_536, 262_144, 1 << 20]
            return edges[random.below(edges.count)] + random.below(3) - 1
        case 2: return -random.below(9_000)
        case 3: return Int.max - random.below(70)
        default: return Int.min + random.below(70)
        }
    }

    static func document(_ id: Int, _ version: Int) -> StoredDocument {
        StoredDocument(fields: ["id": .int(id), "v": .int(version)], created: UInt64(version))
    }

    /// Whether `table` holds exactly `model`'s documents, by subscript and by field read,
    /// and nothing at `absent`.
    static func check(_ table: DocumentTable, _ model: [Int: Int], absent: [Int]) {
        for (id, version) in model {
            #expect(table[id]?.created == UInt64(version), "document \(id)")
            #expect(table[id]?.fields["v"] == .int(version), "document \(id)")
            #expect(table.field("v", of: id)?.value == .int(version), "field v of \(id)")
            #expect(table.field("v", of: id)?.revision == UInt64(version), "revision of \(id)")
        }
        for id in absent where model[id] == nil {
            #expect(table[id] == nil, "no document \(id)")
            #expect(table.field("v", of: id) == nil, "no field of \(id)")
        }
    }

    @Test("inserts, replaces and removes as a dictionary does; earlier copies keep what they held")
    func matchesADictionary() {
        var random = SplitMix64(seed: 0x7AB1E)
        let start = (0..<500).map { _ in Self.id(&random) }
        var model: [Int: Int] = [:]
        for id in start { model[id] = 1 }
        var table = DocumentTable(model.mapValues { _ in Self.document(0, 1) })
        for id in start { table[id] = Self.document(id, 1) }
        Self.check(table, model, absent: [])

        var copies: [(table: DocumentTable, model: [Int: Int])] = []
        var tried: [Int] = []
        for step in 2..<6_000 {
            let id = Self.id(&random)
            tried.append(id)
            if random.below(3) == 0 {
                table[id] = nil
                model[id] = nil
            } else {
                table[id] = Self.document(id, step)
                model[id] = step
            }
            #expect(table[id]?.created == model[id].map(UInt64.init), "after step \(step) on \(id)")
            if step % 500 == 0 {
                Self.check(table, model, absent: tried)
                copies.append((table, model))
            }
        }
        for copy in copies {
            Self.check(copy.table, copy.model, absent: tried)
        }
    }

    @Test("removing every document leaves an empty table, and removing an absent one changes nothing")
    func removesToEmpty() {
        let ids = [0, 1, 15, 16, 255, 256, 4_095, 4_096, 65_536, -1, -17, -4_097, Int.max, Int.min]
        var table = DocumentTable()
        for id in ids { table[id] = Self.document(id, 7) }
        table[5] = nil
        Self.check(table, Dictionary(uniqueKeysWithValues: ids.map { ($0, 7) }), absent: [5, 2, 65])
        for id in ids { table[id] = nil }
        Self.check(table, [:], absent: ids)
    }
}
