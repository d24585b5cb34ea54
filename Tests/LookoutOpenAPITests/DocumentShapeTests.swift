import LookoutJSON
import LookoutOpenAPI
import Testing

@Suite("DocumentShape: field types inferred from documents, writes checked against them")
struct DocumentShapeTests {
    let shape = DocumentShape(documents: [
        JSONObject([("id", 1), ("title", "a"), ("rating", 4), ("tags", ["x"]), ("note", .null)]),
        JSONObject([("id", 2), ("title", "b"), ("rating", 4.5), ("note", "n"), ("flag", true)]),
        JSONObject([("id", 3), ("count", 2), ("mixed", "s")]),
        JSONObject([("id", 4), ("mixed", 1)]),
    ])

    @Test("each field's types; integer and number together are number; id is not a field")
    func inference() {
        #expect(shape.fields["title"] == [.string])
        #expect(shape.fields["rating"] == [.number])
        #expect(shape.fields["tags"] == [.array])
        #expect(shape.fields["note"] == [.null, .string])
        #expect(shape.fields["mixed"] == [.integer, .string])
        #expect(shape.fields["count"] == [.integer])
        #expect(shape.fields["id"] == nil)
        #expect(shape.fieldNames == ["count", "flag", "mixed", "note", "rating", "tags", "title"])
    }

    @Test("a write fits when every described field keeps a type it has; new fields take anything")
    func fits() {
        #expect(shape.violation(in: JSONObject([("title", "c"), ("rating", 3), ("new", ["any": 1])])) == nil)
        #expect(shape.violation(in: JSONObject([("note", .null), ("mixed", 7), ("count", 2.0)])) == nil)
        #expect(shape.violation(in: JSONObject([("id", "not checked here")])) == nil)
    }

    @Test("a described field given another type is named with the types it may hold")
    func violations() {
        #expect(
            shape.violation(in: JSONObject([("title", 5)]))
                == "'title' must be string, as in the collection's documents (it was integer).")
        #expect(
            shape.violation(in: JSONObject([("mixed", true)]))
                == "'mixed' must be integer or string, as in the collection's documents (it was boolean).")
        #expect(shape.violation(in: JSONObject([("count", 2.5)])) != nil)
        #expect(shape.violation(in: JSONObject([("rating", "4")])) != nil)
        #expect(shape.violation(in: JSONObject([("title", .null)])) != nil)
    }

    @Test("in a merge patch null removes a field, whatever its type")
    func patch() {
        #expect(shape.violation(in: JSONObject([("title", .null)]), removing: true) == nil)
        #expect(shape.violation(in: JSONObject([("title", 1)]), removing: true) != nil)
    }
}
