package carrag.esharness;

import org.elasticsearch.Build;
import org.elasticsearch.client.internal.node.NodeClient;
import org.elasticsearch.cluster.metadata.IndexNameExpressionResolver;
import org.elasticsearch.cluster.node.DiscoveryNodes;
import org.elasticsearch.cluster.service.ClusterService;
import org.elasticsearch.common.io.stream.NamedWriteableRegistry;
import org.elasticsearch.common.settings.ClusterSettings;
import org.elasticsearch.common.settings.IndexScopedSettings;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.common.settings.SettingsFilter;
import org.elasticsearch.features.NodeFeature;
import org.elasticsearch.index.IndexVersion;
import org.elasticsearch.plugins.ActionPlugin;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.rest.BaseRestHandler;
import org.elasticsearch.rest.RestController;
import org.elasticsearch.rest.RestHandler;
import org.elasticsearch.rest.RestRequest;
import org.elasticsearch.rest.RestResponse;
import org.elasticsearch.rest.RestStatus;
import org.elasticsearch.xcontent.XContentBuilder;

import java.util.Collection;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
import java.util.function.Supplier;

/**
 * REST endpoints that a distribution gets from modules Elastic does not publish to Maven Central for 8.x:
 * <ul>
 *   <li>{@code GET /} and {@code HEAD /} (the {@code rest-root} module): node/cluster name, cluster UUID, version info;</li>
 *   <li>{@code POST /{index}/_delete_by_query} (the {@code reindex} module): see {@link RestDeleteByQueryAction}.</li>
 * </ul>
 */
public final class HarnessRestPlugin extends Plugin implements ActionPlugin {

    private final AtomicReference<ClusterService> clusterService = new AtomicReference<>();

    @Override
    public Collection<?> createComponents(PluginServices services) {
        clusterService.set(services.clusterService());
        return List.of();
    }

    @Override
    public Collection<RestHandler> getRestHandlers(
        Settings settings,
        NamedWriteableRegistry namedWriteableRegistry,
        RestController restController,
        ClusterSettings clusterSettings,
        IndexScopedSettings indexScopedSettings,
        SettingsFilter settingsFilter,
        IndexNameExpressionResolver indexNameExpressionResolver,
        Supplier<DiscoveryNodes> nodesInCluster,
        Predicate<NodeFeature> clusterSupportsFeature
    ) {
        return List.of(new RootInfoHandler(clusterService::get), new RestDeleteByQueryAction());
    }

    /** {@code GET /}: the same document a distribution answers with (the Python client's {@code info()}). */
    static final class RootInfoHandler extends BaseRestHandler {
        private final Supplier<ClusterService> clusterService;

        RootInfoHandler(Supplier<ClusterService> clusterService) {
            this.clusterService = clusterService;
        }

        @Override
        public String getName() {
            return "carrag_harness_root_info";
        }

        @Override
        public List<Route> routes() {
            return List.of(new Route(RestRequest.Method.GET, "/"), new Route(RestRequest.Method.HEAD, "/"));
        }

        @Override
        public boolean canTripCircuitBreaker() {
            return false;
        }

        @Override
        protected RestChannelConsumer prepareRequest(RestRequest request, NodeClient client) {
            boolean pretty = request.hasParam("pretty") == false; // pretty by default, like a distribution
            return channel -> {
                ClusterService cs = clusterService.get();
                Build build = Build.current();
                XContentBuilder b = channel.newBuilder();
                if (pretty) {
                    b.prettyPrint().lfAtEnd();
                }
                b.startObject();
                b.field("name", cs.localNode().getName());
                b.field("cluster_name", cs.getClusterName().value());
                b.field("cluster_uuid", cs.state().metadata().clusterUUID());
                b.startObject("version");
                b.field("number", build.qualifiedVersion());
                b.field("build_flavor", "default");
                b.field("build_type", build.type().displayName());
                b.field("build_hash", build.hash());
                b.field("build_date", build.date());
                b.field("build_snapshot", build.isSnapshot());
                b.field("lucene_version", IndexVersion.current().luceneVersion().toString());
                b.field("minimum_wire_compatibility_version", build.minWireCompatVersion());
                b.field("minimum_index_compatibility_version", build.minIndexCompatVersion());
                b.endObject();
                b.field("tagline", "You Know, for Search");
                b.endObject();
                channel.sendResponse(new RestResponse(RestStatus.OK, b));
            };
        }
    }
}
