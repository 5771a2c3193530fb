package io.chatintake.support;

import java.util.List;
import java.util.ServiceLoader;
import java.util.function.Function;

/**
 * What the channels contribute to a lower layer through an interface that layer owns, registered
 * in {@code META-INF/services}: the lower layer never names a channel, and a channel added to the
 * class path is found without a change below it.
 */
public final class Contributions {
    private Contributions() {
    }

    /** Everything the registered implementations of {@code contributor} contribute, in the order they are registered. */
    public static <C, T> List<T> of(Class<C> contributor, Function<C, List<T>> contributed) {
        return ServiceLoader.load(contributor, contributor.getClassLoader()).stream()
                .flatMap(provider -> contributed.apply(provider.get()).stream()).toList();
    }
}
