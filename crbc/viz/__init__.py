"""Pure figure builders for the studio: plotly figures and HTML strings; never st.*, never estimator math."""
