package io.chatintake.work;

import static io.chatintake.work.WorkerParts.ORDERED;
import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.LogCapture;
import io.chatintake.testkit.LostCommitAnswers;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.apache.camel.builder.RouteBuilder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Recording outcomes when the database answers a commit with a broken connection (it restarted
 * between committing and answering): the next try finds the outcomes recorded by this process,
 * which is not a claim taken over.
 */
@ExtendWith(TestDatabase.class)
class RecordRunResultsTest {
    private final DataSource database = TestDatabase.dataSource();
    private final List<String> handled = new CopyOnWriteArrayList<>();

    @Test
    void outcomesWhoseCommitsAnswerWasLostAreRecordedOnceAndNoClaimIsTakenForLost() throws Exception {
        LostCommitAnswers lossy = new LostCommitAnswers(database);
        try (WorkerParts parts = new WorkerParts(lossy, new RouteBuilder() {
                 @Override
                 public void configure() {
                     from("work:" + ORDERED).routeId("lost-answer-handler").process(e -> handled.add(e.getMessage().getBody(String.class)));
                 }
             });
             LogCapture log = new LogCapture()) {
            parts.schedule(ORDERED, "lost-answer", 1, 2);
            List<ActiveRun> slice = parts.claimSlice();
            lossy.loseNext(1, "INSERT INTO work_run");

            parts.executing.execute(new Slice(slice));

            assertThat(lossy.armed()).as("the commit's answer was lost").isZero();
            assertThat(handled).containsExactly("ordered-work:1", "ordered-work:2");
            assertThat(Sql.string(database, "SELECT string_agg(state || '/' || attempts, ',' ORDER BY id) FROM work_item WHERE kind = '"
                    + ORDERED + "'")).isEqualTo("done/1,done/1");
            assertThat(Sql.count(database, "SELECT count(*) FROM work_run r JOIN work_item w ON w.id = r.work_item_id WHERE w.kind = '"
                    + ORDERED + "'")).as("each run recorded once").isEqualTo(2);
            assertThat(log.lines()).as("not a claim released or taken over").noneMatch(line -> line.contains("released or taken over"));
            assertThat(slice).as("the runs are not marked lost").noneMatch(run -> run.lost.get());
            assertThat(parts.runs.tokens()).as("nothing left held here").isEmpty();
        }
    }
}
