import Testing

@testable import LookoutFuzzTargets

@Suite("Repeat templates")
struct RepeatTemplateTests {
    func expand(_ text: String, to size: Int) -> String? {
        RepeatTemplate(Array(text.utf8)).map { String(decoding: $0.expanded(fillingUpTo: size), as: UTF8.self) }
    }

    @Test("the marked region repeats with its counter as far as the size allows, at least once")
    func expansion() {
        #expect(expand("{\u{1}\"k\u{3}\":1,\u{2}\"z\":0}", to: 40) == #"{"k0":1,"k1":1,"k2":1,"k3":1,"z":0}"#)
        #expect(expand("[\u{1}1,\u{2}0]", to: 3) == "[1,0]", "one copy even past the size")
        #expect(expand("a\u{1}\u{2}b", to: 100) == "ab", "an empty region repeats to nothing")
        #expect(expand("no markers", to: 100) == nil)
        #expect(expand("\u{2}end before start\u{1}", to: 100) == nil)
        #expect(expand("x=\u{1}\u{3},\u{2}", to: 1 << 20)!.utf8.count <= 1 << 20)
    }

    @Test("the fixtures are sound: each target accepts a plain input")
    func fixtures() throws {
        try FuzzTarget.json.check(Array(#"{"a":[1,2.5,"x",null,true]}"#.utf8))
        try FuzzTarget.query.check(Array("q=tokyo&sort=name&fields=name,rating&expand=owner_id".utf8))
        try FuzzTarget.cursor.check(Array("WyItcmF0aW5nIiw0LjUsNF0".utf8))
        try FuzzTarget.entityTag.check(Array(#"W/"0a1b-42""#.utf8))
        try FuzzTarget.token.check(Array("x".utf8))
        try FuzzTarget.form.check(Array("grant_type=password&username=a%40b&password=x+y".utf8))
        try FuzzTarget.mergePatch.check(Array(#"{"name":"A","address":{"zip":null},"views":11,"new":[1]}"#.utf8))
        try FuzzTarget.dataFile.check(Array(#"{"collections":[{"name":"a","documents":[{"id":1}]}]}"#.utf8))
    }
}
