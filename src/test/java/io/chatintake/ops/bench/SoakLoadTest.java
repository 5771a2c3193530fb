package io.chatintake.ops.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.chatintake.config.ConfigurationException;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The load of bench soak, as its flags set it. */
class SoakLoadTest {
    @Test
    void noFlagsIsTheLoadTheHandlersOnceFellSilentUnder() {
        assertThat(SoakLoad.fromFlags(List.of("soak", "300"))).isEqualTo(new SoakLoad(150, 500, 38, 0.25, 3));
    }

    @Test
    void eachFlagChangesItsOwnFigure() {
        SoakLoad load = SoakLoad.fromFlags(List.of("--telegram-per-second=50", "--chats=10", "--webhook-per-second=5.5",
                "--album-share=0", "--album-size=4"));

        assertThat(load).isEqualTo(new SoakLoad(50, 10, 5.5, 0, 4));
    }

    @Test
    void aFlagWithItsValueAfterASpaceIsRefusedRatherThanTakenForTheSeconds() {
        assertThatThrownBy(() -> SoakLoad.fromFlags(List.of("--chats", "300"))).isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("--chats=N");
        assertThatThrownBy(() -> SoakLoad.fromFlags(List.of("--rate=3"))).isInstanceOf(ConfigurationException.class);
        assertThatThrownBy(() -> SoakLoad.fromFlags(List.of("--chats=many"))).isInstanceOf(ConfigurationException.class);
        assertThatThrownBy(() -> SoakLoad.fromFlags(List.of("--album-share=1.5"))).isInstanceOf(ConfigurationException.class);
    }

    @Test
    void albumChildrenKeepTheirShareOfTheDeliveries() {
        SoakLoad load = new SoakLoad(0, 1, 38, 0.25, 3);
        long sent = 0;
        long children = 0;
        while (sent < 10_000) {
            if (load.albumNext(sent, children)) {
                sent += 3;
                children += 3;
            } else {
                sent++;
            }
        }

        assertThat((double) children / sent).isBetween(0.249, 0.251);
    }

    @Test
    void noShareMeansNoAlbumsAndAFullShareOnlyAlbums() {
        assertThat(new SoakLoad(0, 1, 38, 0, 3).albumNext(0, 0)).isFalse();
        assertThat(new SoakLoad(0, 1, 38, 1, 3).albumNext(300, 300)).isTrue();
    }
}
