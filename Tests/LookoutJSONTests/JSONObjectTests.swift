import LookoutJSON
import Testing

/// Objects of any size cost linear time to parse and to use (issue 16: an object's
/// members were searched key by key, so a 1 MiB body of small keys took 48 s of CPU
/// before any token check). The sizes here took minutes before; the time limit only
/// catches a return of quadratic work, the speed itself is in Benchmarks/README.md.
@Suite("JSON objects of many members", .timeLimit(.minutes(1)))
struct JSONObjectTests {
    static let count = 200_000

    static func object(keys count: Int, duplicateAtEnd: Bool = false) -> [UInt8] {
        var text = "{"
        for index in 0..<count { text += "\"k\(index)\":\(index)," }
        text += duplicateAtEnd ? "\"k0\":0}" : "\"last\":0}"
        return Array(text.utf8)
    }

    @Test("a body of 200,000 keys parses, keeps its order, and finds each key")
    func manyKeys() throws {
        let value = try JSONParser.parse(Self.object(keys: Self.count))
        let object = try #require(value.objectValue)
        #expect(object.count == Self.count + 1)
        #expect(object.keys.first == "k0")
        #expect(object.keys.last == "last")
        for index in stride(from: 0, to: Self.count, by: 997) {
            #expect(object["k\(index)"] == .int(index))
        }
        #expect(object["missing"] == nil)
        #expect(try JSONParser.parse(JSONWriter.encode(value)) == value)
    }

    @Test("a duplicate key after 200,000 others is found")
    func duplicateAtEnd() {
        #expect(throws: JSONParseError.self) {
            try JSONParser.parse(Self.object(keys: Self.count, duplicateAtEnd: true))
        }
    }

    @Test("members set, replaced and removed keep the object consistent across the index threshold")
    func editing() {
        var object = JSONObject()
        var model: [(String, JSONValue)] = []
        var generator = SystemRandomNumberGenerator()
        for step in 0..<3_000 {
            let key = "k\(Int.random(in: 0..<40, using: &generator))"
            if Bool.random(using: &generator) || step % 7 == 0 {
                object[key] = nil
                model.removeAll { $0.0 == key }
            } else {
                object[key] = .int(step)
                if let index = model.firstIndex(where: { $0.0 == key }) {
                    model[index].1 = .int(step)
                } else {
                    model.append((key, .int(step)))
                }
            }
            #expect(object.keys == model.map(\.0))
            for (name, value) in model where object[name] != value {
                Issue.record("\(name) is \(String(describing: object[name])), not \(value), at step \(step)")
            }
        }
        #expect(JSONObject(model) == object)
        #expect(JSONObject(model).hashValue == object.hashValue)
    }
}
