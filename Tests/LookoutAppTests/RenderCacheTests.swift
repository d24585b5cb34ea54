import Testing

@testable import LookoutApp

@Suite("Render cache")
struct RenderCacheTests {
    @Test("renders once what it keeps, every time what it does not, nothing for nil")
    func keeping() {
        let cache = RenderCache<Int>()
        var renders = 0
        for _ in 0..<3 {
            #expect(
                cache.body(for: 1) {
                    renders += 1; return ([1], keep: true)
                } == [1])
        }
        #expect(renders == 1)
        for _ in 0..<3 {
            #expect(
                cache.body(for: 2) {
                    renders += 1; return ([2], keep: false)
                } == [2])
        }
        #expect(renders == 4)
        #expect(cache.body(for: 3) { nil } == nil)
    }
}
