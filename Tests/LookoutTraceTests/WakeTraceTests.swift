import LookoutTestSupport
import Testing

@testable import LookoutTrace

@Suite("WakeTrace: stamps folded into a row per revision")
struct WakeTraceTests {
    typealias Stamp = WakeTrace.Stamp

    @Test("each revision's row holds the first stamp of each stage, rows by ascending revision")
    func firstStampOfEachStage() {
        let stamps = [
            Stamp(revision: 7, time: 100, stage: .received),
            Stamp(revision: 7, time: 110, stage: .published),
            Stamp(revision: 3, time: 50, stage: .published),
            Stamp(revision: 7, time: 120, stage: .woke),
            Stamp(revision: 7, time: 125, stage: .woke),  // a second poll the same write woke
            Stamp(revision: 3, time: 60, stage: .sent),
            Stamp(revision: 7, time: 130, stage: .sent),
        ]
        let rows = WakeTrace.rows(stamps)
        #expect(rows.map(\.revision) == [3, 7])
        var three = [UInt64](repeating: 0, count: WakeTrace.Stage.allCases.count)
        three[WakeTrace.Stage.published.rawValue] = 50
        three[WakeTrace.Stage.sent.rawValue] = 60
        var seven = [UInt64](repeating: 0, count: WakeTrace.Stage.allCases.count)
        seven[WakeTrace.Stage.received.rawValue] = 100
        seven[WakeTrace.Stage.published.rawValue] = 110
        seven[WakeTrace.Stage.woke.rawValue] = 120
        seven[WakeTrace.Stage.sent.rawValue] = 130
        #expect(rows.map(\.times) == [three, seven])
    }

    @Test("random stamps fold as a scan of each revision and stage would find them")
    func randomStampsAgainstAScan() {
        var generator = SplitMix64(seed: 0x57A3B)
        let stamps = (0..<3000).map { _ in
            Stamp(
                revision: UInt64.random(in: 1...40, using: &generator),
                time: UInt64.random(in: 1...1_000_000, using: &generator),
                stage: WakeTrace.Stage.allCases.randomElement(using: &generator)!)
        }
        let rows = WakeTrace.rows(stamps)
        #expect(rows.map(\.revision) == Set(stamps.map(\.revision)).sorted())
        for (revision, times) in rows {
            for stage in WakeTrace.Stage.allCases {
                let first = stamps.first { $0.revision == revision && $0.stage == stage }
                #expect(times[stage.rawValue] == first?.time ?? 0)
            }
        }
    }
}
