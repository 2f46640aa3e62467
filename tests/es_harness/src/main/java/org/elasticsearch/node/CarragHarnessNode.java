package org.elasticsearch.node;

import org.elasticsearch.env.Environment;
import org.elasticsearch.plugins.MockPluginsService;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.plugins.PluginsLoader;
import org.elasticsearch.plugins.PluginsService;

import java.util.Collection;
import java.util.List;

/**
 * A plain (non-mock) Elasticsearch {@link Node} whose plugins are loaded from the JVM classpath
 * instead of a distribution's {@code modules/} and {@code plugins/} directories.
 *
 * <p>It lives in {@code org.elasticsearch.node} only because the construction hooks it needs
 * ({@link NodeConstruction}, {@link NodeServiceProvider}) are package-private. Every service is the
 * production one; only plugin discovery differs (the same technique as the test framework's MockNode,
 * minus its test-only service substitutions and its randomized-testing dependencies).
 */
public final class CarragHarnessNode extends Node {

    public CarragHarnessNode(Environment environment, Collection<Class<? extends Plugin>> classpathPlugins) {
        super(NodeConstruction.prepareConstruction(environment, null, new NodeServiceProvider() {
            @Override
            PluginsService newPluginService(Environment env, PluginsLoader pluginsLoader) {
                return new MockPluginsService(env.settings(), env, List.copyOf(classpathPlugins));
            }
        }, true));
    }
}
