import LookoutFeeds
import LookoutJSON
import LookoutStore
import Testing

@Suite("Read scopes: what a read without a token may see, and so wait on")
struct ReadScopeTests {
    /// `shops` shows `name` and `city` publicly; `owners` shows `name`; `partners` nothing;
    /// `posts` everything, and refers to `owners` and `partners`.
    func makeSnapshot() throws -> StoreSnapshot {
        let shops: [JSONValue] = [
            ["id": 1, "name": "Alpha", "city": "Tokyo", "secret": "x", "owner_id": 1, "partner_id": 1],
            ["id": 2, "name": "Beta", "city": "Kyoto", "secret": "tokyo", "owner_id": 2, "partner_id": 1],
        ]
        return try Store(
            [
                try DocumentCollection(
                    name: "shops",
                    options: .init(
                        sort: ["name"], references: ["owner_id": "owners", "partner_id": "partners"],
                        publicFields: .fields(["name", "city", "owner_id", "partner_id", "name"])),
                    documents: shops),
                try DocumentCollection(
                    name: "owners", options: .init(publicFields: .fields(["name"])),
                    documents: [["id": 1, "name": "Ann", "phone": "1"], ["id": 2, "name": "Bo", "phone": "2"]]),
                try DocumentCollection(name: "partners", documents: [["id": 1, "name": "P"]]),
                try DocumentCollection(
                    name: "posts",
                    options: .init(references: ["owner_id": "owners", "partner_id": "partners"], publicFields: .all),
                    documents: [["id": 1, "title": "Hi", "owner_id": 1, "partner_id": 1]]),
            ], epoch: "e"
        ).snapshot()
    }

    func query(_ text: String, _ snapshot: StoreSnapshot, _ scope: ReadScope, collection: String = "shops")
        throws(QueryError) -> ListQuery
    {
        let pairs = text.split(separator: "&").map { item in
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (name: String(parts[0]), value: parts.count > 1 ? String(parts[1]) : "")
        }
        return try ListQuery(collection: collection, parameters: pairs, in: snapshot, scope: scope)!
    }

    /// The fields a query's evaluation read, as `collection/id.field`.
    func readFields(_ text: String, _ snapshot: StoreSnapshot, _ scope: ReadScope) throws -> Set<String> {
        var reads = ReadSet()
        _ = try query(text, snapshot, scope).evaluate(in: snapshot, reads: &reads)
        return Set(reads.keys.map(\.description))
    }

    @Test("public fields: repeats and id dropped, id always public, none and all")
    func publicFields() {
        #expect(PublicFields.fields(["a", "id", "b", "a"]) == .only(["a", "b"]))
        #expect(PublicFields.only(["a"]).contains("id") && !PublicFields.only(["a"]).contains("b"))
        #expect(!PublicFields.none.contains("id") && PublicFields.all.contains("anything"))
        #expect(DocumentCollection.Options().publicFields == .none, "secure by default")
    }

    @Test("a partly public collection must sort by public fields by default; others may sort by anything")
    func declaredSort() throws {
        #expect(throws: StoreError.self) {
            try DocumentCollection(name: "c", options: .init(sort: ["-b"], publicFields: .fields(["a"])), documents: [])
        }
        _ = try DocumentCollection(
            name: "c", options: .init(sort: ["-a", "id"], publicFields: .fields(["a"])), documents: [])
        _ = try DocumentCollection(name: "c", options: .init(sort: ["b"], publicFields: .all), documents: [])
        _ = try DocumentCollection(name: "c", options: .init(sort: ["b"]), documents: [])
    }

    @Test("in public scope, a list, its search and its expansions read only public fields")
    func readSetsArePublic() throws {
        let snapshot = try makeSnapshot()
        let keys = try readFields("q=tokyo&expand=owner_id", snapshot, .publicFields)
        #expect(keys.allSatisfy { !$0.hasSuffix(".secret") && !$0.hasSuffix(".phone") }, "\(keys)")
        #expect(!keys.contains("shops/1") && !keys.contains("shops/2"), "no field-name sets: \(keys)")
        #expect(keys.contains("owners/1.name"))
        let full = try readFields("q=tokyo&expand=owner_id", snapshot, .everything)
        #expect(full.contains("shops/2.secret") && full.contains("owners/1.phone"), "\(full)")
    }

    @Test("in public scope, documents hold the public fields, and search finds only through them")
    func results() throws {
        let snapshot = try makeSnapshot()
        var reads = ReadSet()
        let result = try query("q=tokyo&expand=owner_id", snapshot, .publicFields).evaluate(in: snapshot, reads: &reads)
        #expect(
            result.documents == [
                [
                    "id": 1, "name": "Alpha", "city": "Tokyo", "owner_id": 1, "partner_id": 1,
                    "owner": ["id": 1, "name": "Ann"],
                ]
            ])
        let everything = try query("q=tokyo", snapshot, .everything).evaluate(in: snapshot, reads: &reads)
        #expect(everything.documents.compactMap { $0["id"]?.intValue } == [1, 2])
    }

    @Test(
        "in public scope, naming a field that is not public needs a token; a public one is read as always",
        arguments: [
            ("secret=x", true), ("secret_ne=x", true), ("secret_like=x", true), ("secret.a=1", true),
            ("sort=-secret", true), ("fields=name,secret", true), ("expand=partner_id", true), ("nothing=1", true),
            ("city=Tokyo", false), ("city_ne=Tokyo&sort=-city", false), ("fields=city", false),
            ("id_gt=1", false), ("city_xx=1", false),
        ])
    func tokenRequired(_ text: String, _ needsToken: Bool) throws {
        let snapshot = try makeSnapshot()
        do {
            _ = try query(text, snapshot, .publicFields)
            #expect(!needsToken, "\(text) was accepted")
        } catch {
            #expect(error.needsToken == needsToken, "\(text): \(error)")
        }
        do {
            _ = try query(text, snapshot, .everything)
        } catch {
            #expect(!error.needsToken, "\(text) with every field: \(error)")
        }
    }

    @Test("in public scope, an expansion from a collection public as a whole shows, and reads, its own public fields")
    func expansionFromPublicCollection() throws {
        let snapshot = try makeSnapshot()
        var reads = ReadSet()
        let result = try query("expand=owner_id", snapshot, .publicFields, collection: "posts")
            .evaluate(in: snapshot, reads: &reads)
        #expect(
            result.documents == [
                ["id": 1, "title": "Hi", "owner_id": 1, "partner_id": 1, "owner": ["id": 1, "name": "Ann"]]
            ])
        let keys = Set(reads.keys.map(\.description))
        #expect(keys.contains("owners/1.name") && !keys.contains("owners/1.phone"), "\(keys)")
        #expect(throws: QueryError.self) {
            try query("expand=partner_id", snapshot, .publicFields, collection: "posts")
        }
        var all = ReadSet()
        let full = try query("expand=owner_id", snapshot, .everything, collection: "posts").evaluate(
            in: snapshot, reads: &all)
        #expect(full.documents.first?["owner"]?["phone"] == "1")
        #expect(
            Projection.expandedCollections("owner_id,title,partner_id", of: try #require(snapshot.options(of: "posts")))
                == ["owners", "partners"])
    }

    @Test("a collection with no public fields needs a token in public scope")
    func nothingPublic() throws {
        let snapshot = try makeSnapshot()
        #expect(throws: QueryError.tokenRequired(collection: "partners")) {
            try query("", snapshot, .publicFields, collection: "partners")
        }
        _ = try query("", snapshot, .everything, collection: "partners")
    }
}
