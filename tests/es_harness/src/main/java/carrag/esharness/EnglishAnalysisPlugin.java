package carrag.esharness;

import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.CharArraySet;
import org.apache.lucene.analysis.en.EnglishAnalyzer;
import org.elasticsearch.index.analysis.AbstractIndexAnalyzerProvider;
import org.elasticsearch.index.analysis.Analysis;
import org.elasticsearch.index.analysis.AnalyzerProvider;
import org.elasticsearch.index.analysis.PreBuiltAnalyzerProviderFactory;
import org.elasticsearch.indices.analysis.AnalysisModule.AnalysisProvider;
import org.elasticsearch.indices.analysis.PreBuiltCacheFactory.CachingStrategy;
import org.elasticsearch.plugins.AnalysisPlugin;
import org.elasticsearch.plugins.Plugin;

import java.util.List;
import java.util.Map;

/**
 * Provides the {@code english} analyzer.
 *
 * <p>In a real Elasticsearch distribution the language analyzers come from the {@code analysis-common}
 * module, which Elastic does not publish to Maven Central for 8.x. Both that module and this plugin wrap
 * Lucene's {@link EnglishAnalyzer} (standard tokenizer, english possessive filter, lowercase, english stop
 * words, keyword marker for {@code stem_exclusion}, Porter stemmer), so {@code "analyzer": "english"} and a
 * custom analyzer of {@code "type": "english"} (with {@code stopwords} / {@code stem_exclusion}) behave as
 * in a distribution.
 */
public final class EnglishAnalysisPlugin extends Plugin implements AnalysisPlugin {

    static final String NAME = "english";

    @Override
    public Map<String, AnalysisProvider<AnalyzerProvider<? extends Analyzer>>> getAnalyzers() {
        return Map.of(NAME, (indexSettings, environment, name, settings) -> {
            CharArraySet stopWords = Analysis.parseStopWords(environment, settings, EnglishAnalyzer.getDefaultStopSet());
            CharArraySet stemExclusion = Analysis.parseStemExclusion(settings, CharArraySet.EMPTY_SET);
            EnglishAnalyzer analyzer = new EnglishAnalyzer(stopWords, stemExclusion);
            return new AbstractIndexAnalyzerProvider<EnglishAnalyzer>(name, settings) {
                @Override
                public EnglishAnalyzer get() {
                    return analyzer;
                }
            };
        });
    }

    @Override
    public List<PreBuiltAnalyzerProviderFactory> getPreBuiltAnalyzerProviderFactories() {
        return List.of(new PreBuiltAnalyzerProviderFactory(NAME, CachingStrategy.LUCENE, EnglishAnalyzer::new));
    }
}
